#!/bin/sh
# Remakes the architecture test files and llama.cpp's reference ids:
#   make.sh LLAMA_CPP_DIR
# where LLAMA_CPP_DIR is a llama.cpp checkout built with cmake (build/bin
# holds llama-quantize; build/ has libllama and ggml as static
# libraries). ref.cpp is compiled against them. PYTHON names a python
# with numpy (Debian's python3-numpy: PYTHON=/usr/bin/python3); a
# checkout without git history names its commit in LLAMA_CPP_REF
# (build-ref.sh).
set -eu
llama=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PYTHONPATH="$llama/gguf-py" "${PYTHON:-python3}" "$here/make.py" "$tmp"
sh "$here/build-ref.sh" "$llama" "$tmp/ref" "$here/LLAMA_CPP_VERSION"
b="$llama/build"
for arch in llama qwen2 qwen3 gemma3; do
	cp "$tmp/$arch-f32.gguf" "$here/"
	"$b/bin/llama-quantize" "$tmp/$arch-f32.gguf" "$here/$arch-f16.gguf" F16 >/dev/null 2>&1
	"$b/bin/llama-quantize" "$tmp/$arch-f32.gguf" "$here/$arch-bf16.gguf" BF16 >/dev/null 2>&1
	"$b/bin/llama-quantize" "$tmp/$arch-f32.gguf" "$here/$arch-q8_0.gguf" Q8_0 >/dev/null 2>&1
	"$b/bin/llama-quantize" "$tmp/$arch-kq-f32.gguf" "$here/$arch-q4_k_m.gguf" Q4_K_M >/dev/null 2>&1
	# each with the cache the engine keeps for it: floats for f32 weights,
	# halves for 16-bit and quantized ones
	"$tmp/ref" "$here/$arch-f32.gguf" "$here/strings.jsonl" "$here/prompts.jsonl" 32 f32 > "$here/$arch-f32.json"
	for f in f16 bf16 q8_0 q4_k_m; do
		"$tmp/ref" "$here/$arch-$f.gguf" "$here/strings.jsonl" "$here/prompts.jsonl" 32 f16 > "$here/$arch-$f.json"
	done
done
# Gemma 3 4B and larger: linear rope scaling on the global layers only;
# and a layer period and sliding base other than the defaults
for name in gemma3-linear gemma3-period; do
	cp "$tmp/$name-f32.gguf" "$here/"
	"$tmp/ref" "$here/$name-f32.gguf" "$here/strings.jsonl" "$here/prompts.jsonl" 32 f32 > "$here/$name-f32.json"
done
