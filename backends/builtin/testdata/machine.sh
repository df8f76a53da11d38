# machine.sh, sourced by speed-table.sh and rss-table.sh: machine_line names
# the CPU and the day a table's figures came from, as the docs' tables do.
# A VM's model name can be as bare as "AMD EPYC" on a Zen 3 and a Zen 4
# alike, so the line adds the family and model numbers and the vector
# extensions the kernels choose by (tokentop's, and llama.cpp's: with
# avx512_bf16 its BF16 products multiply bfloat16 pairs). CPUINFO names another file to read
# (the tests' samples).
machine_line() {
	local cpu
	cpu=$(awk -F': ' '
		/^model name/ && !name { name = $2 }
		/^cpu family/ && family == "" { family = $2 }
		/^model[ \t]*:/ && model == "" { model = $2 }
		/^flags/ && !flags {
			flags = 1
			n = split("avx2 fma f16c avx512f avx512_vnni avx512_bf16 avx_vnni amx_tile", want, " ")
			for (i = 1; i <= n; i++) if ((" " $2 " ") ~ (" " want[i] " ")) isa = isa (isa ? " " : "") want[i]
			if (isa !~ /avx512f/) isa = isa (isa ? "; " : "") "no avx512f"
		}
		END {
			if (!name) exit
			printf "%s", name
			if (family != "") printf " (family %s, model %s; %s)", family, model, isa
		}' "${CPUINFO:-/proc/cpuinfo}" 2>/dev/null || true)
	echo "CPU: ${cpu:-$(uname -m)}, $(nproc) threads available; $(date -u +%Y-%m-%d)"
}
