#!/bin/sh
# Builds ref.cpp against a llama.cpp checkout built with cmake (build/ has
# libllama and ggml as static libraries), and records which llama.cpp:
#   build-ref.sh LLAMA_CPP_DIR OUT_BINARY VERSION_FILE
set -eu
llama=$1
b="$llama/build"
g++ -O2 -std=c++17 "$(dirname "$0")/ref.cpp" -I"$llama/include" -I"$llama/ggml/include" \
	"$b/src/libllama.a" "$b/ggml/src/libggml.a" "$b/ggml/src/libggml-cpu.a" "$b/ggml/src/libggml-base.a" \
	-fopenmp -lpthread -ldl -o "$2"
git -C "$llama" log -1 --format="llama.cpp %H %cs" > "$3" 2>/dev/null || echo "llama.cpp, no git history" > "$3"
