# speed-summary.awk: speed-table.sh's Markdown table from its runs.tsv, one
# line a pair of runs: round, preset, test, threads, tokentop tok/s,
# llama.cpp tok/s. Each engine's column is its median; the ratio is the
# median of the rounds' ratios, each of a tokentop run and the llama-bench
# run right after it, so a machine that drifts between rounds moves both
# sides of a ratio together; "rounds" is their lowest and highest.
#
#   awk -v shape=stories110M -v label=" @ d2048" -f speed-summary.awk runs.tsv
BEGIN { FS = "\t" }
{
	key = $2 SUBSEP $3 SUBSEP $4
	if (!(key in n)) order[++keys] = key
	i = ++n[key]
	mine[key, i] = $5
	theirs[key, i] = $6
	ratio[key, i] = $5 / $6
}
END {
	printf "| %s | test | threads | tokentop tok/s | llama.cpp tok/s | tokentop ÷ llama.cpp | rounds |\n", shape
	print "|---|---|---:|---:|---:|---:|---|"
	for (k = 1; k <= keys; k++) {
		key = order[k]
		split(key, part, SUBSEP)
		d = part[2] == "tg128" ? label : ""
		sorted(mine, key); a = middle(n[key])
		sorted(theirs, key); b = middle(n[key])
		sorted(ratio, key)
		printf "| %s | %s%s | %s | %.1f | %.1f | %.2f | %.2f–%.2f |\n", part[1], part[2], d, part[3], a, b, middle(n[key]), v[1], v[n[key]]
	}
}

# sorted copies column[key, 1..n[key]] into v, in ascending order.
function sorted(column, key,    i, j, x) {
	for (i = 1; i <= n[key]; i++) {
		x = column[key, i]
		for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]
		v[j + 1] = x
	}
}

function middle(count) {
	return count % 2 ? v[(count + 1) / 2] : (v[count / 2] + v[count / 2 + 1]) / 2
}
