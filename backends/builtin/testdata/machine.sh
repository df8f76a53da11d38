# machine.sh, sourced by speed-table.sh and rss-table.sh: machine_line names
# the CPU and the day a table's figures came from, as the docs' tables do.
machine_line() {
	local cpu
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
	echo "CPU: ${cpu:-$(uname -m)}, $(nproc) threads available; $(date -u +%Y-%m-%d)"
}
