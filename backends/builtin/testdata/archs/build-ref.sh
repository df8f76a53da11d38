#!/bin/sh
# Builds ref.cpp against a llama.cpp checkout built with cmake (build/ has
# libllama and ggml as static libraries), and records which llama.cpp:
#   build-ref.sh LLAMA_CPP_DIR OUT_BINARY VERSION_FILE
# A checkout without git history (a source snapshot) names itself in
# LLAMA_CPP_REF ("owner/llama.cpp COMMIT DATE"), so the record is never lost.
set -eu
llama=$1
b="$llama/build"
if version=$(git -C "$llama" log -1 --format="llama.cpp %H %cs" 2>/dev/null); then
	:
elif [ -n "${LLAMA_CPP_REF:-}" ]; then
	version="llama.cpp $LLAMA_CPP_REF"
else
	echo "build-ref.sh: $llama has no git history; name its commit in LLAMA_CPP_REF (\"owner/llama.cpp COMMIT DATE\")" >&2
	exit 2
fi
g++ -O2 -std=c++17 "$(dirname "$0")/ref.cpp" -I"$llama/include" -I"$llama/ggml/include" \
	"$b/src/libllama.a" "$b/ggml/src/libggml.a" "$b/ggml/src/libggml-cpu.a" "$b/ggml/src/libggml-base.a" \
	-fopenmp -lpthread -ldl -o "$2"
echo "$version" > "$3"
