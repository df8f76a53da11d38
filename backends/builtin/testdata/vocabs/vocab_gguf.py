#!/usr/bin/env python3
"""Writes a vocabulary-only GGUF from a Hugging Face tokenizer.json, as
llama.cpp's convert_hf_to_gguf.py writes the vocabulary, with llama.cpp's
own gguf-py: byte-level BPE as its get_vocab_base and _set_vocab_gpt2
(PRE a pre-tokenizer name), or, for PRE "spm", Gemma's sentencepiece as
its _create_vocab_sentencepiece and Gemma3Model.set_vocab.

The converter reads a BPE vocabulary through transformers' AutoTokenizer
and a sentencepiece one from tokenizer.model; this reads the same tokens
from tokenizer.json (the model's pieces by id, then the added tokens), so
that no Python package beyond gguf-py and numpy is needed. Ids past the
last token up to the model's vocab_size are "[PADn]" (UNUSED), added
tokens CONTROL where special or special-looking, else USER_DEFINED, as
there. tokenizer.json has no sentencepiece scores: each piece's score is
minus the rank of the first merge that makes it (Hugging Face's converter
ranks the merges by the pieces' scores), so merging by score merges in
tokenizer.json's order; pieces no merge makes score 0, added tokens -1000.

usage: PYTHONPATH=LLAMA_CPP/gguf-py python3 vocab_gguf.py TOKENIZER_DIR ARCH PRE VOCAB_SIZE OUT.gguf
"""
import json
import sys
from pathlib import Path

import gguf


def looks_special(text):
    # the converter's does_token_look_special
    return (text in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
            or (text.startswith("<|") and text.endswith("|>"))
            or (text.startswith("<\uff5c") and text.endswith("\uff5c>"))
            or (text.startswith("<unused") and text.endswith(">")))


def added(text, special):
    """An added token's type and text, as the converter writes them: CONTROL
    where special or special-looking, else USER_DEFINED with its ▁ marks
    written as spaces."""
    if special or looks_special(text):
        return gguf.TokenType.CONTROL, text
    return gguf.TokenType.USER_DEFINED, text.replace("\u2581", " ")


def spm(src, tj, arch, vocab_size, out):
    model = tj["model"]
    if not model.get("byte_fallback"):
        sys.exit("%s: not a sentencepiece vocabulary (no byte fallback)" % src)
    tokens = ["[PAD%d]" % i for i in range(vocab_size)]
    scores = [-10000.0] * vocab_size
    types = [gguf.TokenType.UNUSED] * vocab_size
    rank = {}
    for r, m in enumerate(model["merges"]):
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        rank.setdefault(a + b, r)
    for text, i in model["vocab"].items():
        if i >= vocab_size:
            continue
        tokens[i] = text
        scores[i] = -float(rank.get(text, 0))
        if text == model.get("unk_token"):
            types[i] = gguf.TokenType.UNKNOWN
        elif len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
            types[i] = gguf.TokenType.BYTE
        else:
            types[i] = gguf.TokenType.NORMAL
    config = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    for key, a in config.get("added_tokens_decoder", {}).items():
        i = int(key)
        if i >= vocab_size:
            continue
        types[i], tokens[i] = added(a["content"], a.get("special"))
        scores[i] = -1000.0
    w = gguf.GGUFWriter(out, arch)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    gguf.SpecialVocab(src, n_vocab=vocab_size).add_to_gguf(w)
    w.add_add_space_prefix(False)
    return w


def bpe(src, tj, arch, pre, vocab_size, out):
    if tj["model"]["type"] != "BPE":
        sys.exit("%s: a %s model, not byte-level BPE" % (src, tj["model"]["type"]))
    by_id = {i: t for t, i in tj["model"]["vocab"].items()}
    additions = {a["id"]: a for a in tj["added_tokens"]}
    for i, a in additions.items():
        by_id[i] = a["content"]
    if max(by_id) >= vocab_size:
        sys.exit("token id %d is past vocab_size %d" % (max(by_id), vocab_size))
    tokens, types = [], []
    for i in range(vocab_size):
        if i not in by_id:
            tokens.append("[PAD%d]" % i)
            types.append(gguf.TokenType.UNUSED)
            continue
        typ, text = added(by_id[i], additions[i]["special"]) if i in additions else (gguf.TokenType.NORMAL, by_id[i])
        types.append(typ)
        tokens.append(text)
    w = gguf.GGUFWriter(out, arch)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    gguf.SpecialVocab(src, load_merges=True, n_vocab=vocab_size).add_to_gguf(w)
    return w


def main():
    src, arch, pre, vocab_size, out = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    tj = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    w = spm(src, tj, arch, vocab_size, out) if pre == "spm" else bpe(src, tj, arch, pre, vocab_size, out)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


if __name__ == "__main__":
    main()
