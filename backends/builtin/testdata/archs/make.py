#!/usr/bin/env python3
"""Makes the architecture test files with llama.cpp's own gguf-py.

Random weights at small shapes for llama (Llama 3 rope_freqs), qwen2,
qwen3 and gemma3, each with a vocabulary of the kind its models carry
(byte-level BPE with llama.cpp's pre-tokenizer names, or Gemma's
sentencepiece with byte tokens at 6 and no space prefix), and a second
gemma3 file with the linear rope scaling of Gemma 3 4B and larger, and a
third with a layer period and a sliding rotary base of its own.
make.sh then quantizes them with llama-quantize and records llama.cpp's
ids.

usage: PYTHONPATH=LLAMA_CPP/gguf-py python3 make.py OUTDIR [big]
"""
import collections
import re
import sys

import numpy as np
import gguf

CORPUS = """The quick brown fox jumps over the lazy dog. It's a test; they're here, we'll see.
Once upon a time, there was a little girl named Lily. She liked to play in the park with her friends.
def main():\n    for i in range(10):\n        print(i * 2, "hello world")\n
Numbers: 1 12 123 1234 12345 3.14159 2026-11-28 $1,000,000 100% 42nd.
Les élèves étudient à l'école. Москва — столица России. 東京は日本の首都です。 مرحبا بالعالم
Tabs\tand  double  spaces,   and newlines\n\nand emoji 🙂🚀 café naïve résumé.
"""


def byte_units():
    """GPT-2's printable stand-in for each byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def train_bpe(words, n_merges):
    """Greedy BPE merges over words (each a tuple of symbols)."""
    counts = collections.Counter(words)
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, c in counts.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append((a, b))
        merged = collections.Counter()
        for w, c in counts.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += c
        counts = merged
    return merges


def bpe_vocab(specials):
    units = byte_units()
    words = [tuple(units[b] for b in w.encode()) for w in re.findall(r" ?\w+| ?[^\w\s]+|\s+", CORPUS)]
    merges = train_bpe(words, 300)
    tokens = [units[b] for b in range(256)]
    for a, b in merges:
        if a + b not in tokens:
            tokens.append(a + b)
    # Whole words no merge sequence reaches: Llama 3's vocabulary takes
    # them as they are (llama.cpp's ignore_merges), Qwen's merges.
    for w in ["Ġhello", "Ġworld", "ĠLily", "Ġpark"]:
        if w not in tokens:
            tokens.append(w)
    types = [gguf.TokenType.NORMAL] * len(tokens)
    # Added tokens that are not special (Qwen's <tool_call>): llama.cpp
    # takes their text whole wherever a prompt has it.
    for s in ["<tool_call>", "</tool_call>"]:
        tokens.append(s)
        types.append(gguf.TokenType.USER_DEFINED)
    for s in specials:
        tokens.append(s)
        types.append(gguf.TokenType.CONTROL)
    return tokens, [a + " " + b for a, b in merges], types


def spm_vocab():
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "[multimodal]"]
    types = [gguf.TokenType.CONTROL, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL, gguf.TokenType.UNKNOWN,
             gguf.TokenType.USER_DEFINED, gguf.TokenType.USER_DEFINED]
    tokens += ["<0x%02X>" % b for b in range(256)]
    types += [gguf.TokenType.BYTE] * 256
    tokens.append("<end_of_turn>")
    types.append(gguf.TokenType.CONTROL)
    scores = [0.0] * len(tokens)
    text = CORPUS.replace(" ", "\u2581")
    # characters of the corpus, but not the emoji and not all of the CJK:
    # those fall back to byte tokens
    chars = sorted({c for c in text if ord(c) < 0x3000 and c not in "\n"})
    words = [tuple(w) for w in re.findall("\u2581?[^\u2581\\s]+|\u2581+|\\s", text)]
    merges = train_bpe(words, 250)
    pieces = chars + [a + b for a, b in merges] + ["\u2581\u2581", "\u2581\u2581\u2581", "\u2581\u2581\u2581\u2581"]
    seen = set(tokens)
    for rank, p in enumerate(pieces):
        if p in seen:
            continue
        seen.add(p)
        tokens.append(p)
        types.append(gguf.TokenType.NORMAL)
        scores.append(-float(rank) / 10 if len(p) > 1 else -1000.0 - rank)
    return tokens, scores, types


def rnd(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def norm_weight(rng, n):
    return (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)


def write(path, arch, shape, seed, vocab_size=0, rope_linear=0.0, sliding_period=None, sliding_base=None):
    rng = np.random.default_rng(seed)
    d, hid, layers, heads, kv, hd = shape
    qd, kvd = heads * hd, kv * hd
    w = gguf.GGUFWriter(path, arch)
    # the large files say what the real ones do: the engine allocates for
    # 4096 of it
    w.add_context_length(131072 if vocab_size else 512)
    w.add_embedding_length(d)
    w.add_feed_forward_length(hid)
    w.add_block_count(layers)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    if hd != d // heads:
        w.add_key_length(hd)
        w.add_value_length(hd)
    if arch == "gemma3":
        w.add_layer_norm_rms_eps(1e-6)
        w.add_rope_freq_base(1_000_000.0)
        w.add_sliding_window(512 if vocab_size else 8)
        w.add_final_logit_softcapping(30.0)
        if rope_linear:
            # Gemma 3 4B, 12B and 27B: their global layers' positions
            # scaled, the sliding layers' not
            w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
            w.add_rope_scaling_factor(rope_linear)
        if sliding_period is not None:
            w.add_sliding_window_pattern(sliding_period)
        if sliding_base is not None:
            w.add_rope_freq_base_swa(sliding_base)
        tokens, scores, types = spm_vocab()
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_bos_token_id(2)
        w.add_eos_token_id(1)
        w.add_unk_token_id(3)
        w.add_pad_token_id(0)
        w.add_add_bos_token(True)
        w.add_add_space_prefix(False)
    else:
        w.add_layer_norm_rms_eps(1e-5 if arch == "llama" else 1e-6)
        w.add_rope_freq_base(500_000.0 if arch == "llama" else 1_000_000.0)
        specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"] if arch == "llama" else ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        tokens, merges, types = bpe_vocab(specials)
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre({"llama": "llama-bpe", "qwen2": "deepseek-r1-qwen", "qwen3": "qwen2"}[arch])
        w.add_token_merges(merges)
        first = len(tokens) - 3
        if arch == "llama":
            w.add_bos_token_id(first)
            w.add_eos_token_id(first + 2)
        else:
            w.add_bos_token_id(first)
            w.add_eos_token_id(first + 2)
            w.add_add_bos_token(False)
    # The large files pad the vocabulary to the real models' size with
    # reserved control tokens: the classifier is a large part of a small
    # model's work.
    while len(tokens) < vocab_size:
        tokens.append("<|reserved_%d|>" % len(tokens))
        types.append(gguf.TokenType.CONTROL)
        if arch == "gemma3":
            scores.append(0.0)
    w.add_token_list(tokens)
    w.add_token_types(types)
    if arch == "gemma3":
        w.add_token_scores(scores)
    vocab = len(tokens)
    w.add_vocab_size(vocab)

    # qwen3's file is tied (its classifier is the embedding), as the small
    # Qwen, Qwen3 and Gemma 3 models are; the others are not, as a tied
    # random model mostly repeats a token. Small embeddings and strong
    # layer outputs keep the tied one from repeating its last token.
    tied = arch == "qwen3" or vocab_size > 0
    w.add_tensor("token_embd.weight", rnd(rng, vocab, d, scale=0.3 if tied else 1.0))
    out_gain = 4.0 if tied else 1.0
    w.add_tensor("output_norm.weight", norm_weight(rng, d))
    if not tied:
        w.add_tensor("output.weight", rnd(rng, vocab, d, scale=1.0))
    if arch == "llama":
        # Llama 3.1's factors: 1 for high frequencies, up to 8 for low
        w.add_tensor("rope_freqs.weight", np.linspace(1, 8, hd // 2).astype(np.float32))
    for l in range(layers):
        p = "blk.%d." % l
        w.add_tensor(p + "attn_norm.weight", norm_weight(rng, d))
        w.add_tensor(p + "attn_q.weight", rnd(rng, qd, d, scale=d ** -0.5))
        w.add_tensor(p + "attn_k.weight", rnd(rng, kvd, d, scale=d ** -0.5))
        w.add_tensor(p + "attn_v.weight", rnd(rng, kvd, d, scale=d ** -0.5))
        w.add_tensor(p + "attn_output.weight", rnd(rng, d, qd, scale=out_gain * qd ** -0.5))
        w.add_tensor(p + "ffn_norm.weight", norm_weight(rng, d))
        w.add_tensor(p + "ffn_gate.weight", rnd(rng, hid, d, scale=d ** -0.5))
        w.add_tensor(p + "ffn_up.weight", rnd(rng, hid, d, scale=d ** -0.5))
        w.add_tensor(p + "ffn_down.weight", rnd(rng, d, hid, scale=out_gain * hid ** -0.5))
        if arch == "qwen2":
            w.add_tensor(p + "attn_q.bias", rnd(rng, qd, scale=0.5))
            w.add_tensor(p + "attn_k.bias", rnd(rng, kvd, scale=0.5))
            w.add_tensor(p + "attn_v.bias", rnd(rng, kvd, scale=0.5))
        if arch in ("qwen3", "gemma3"):
            w.add_tensor(p + "attn_q_norm.weight", norm_weight(rng, hd))
            w.add_tensor(p + "attn_k_norm.weight", norm_weight(rng, hd))
        if arch == "gemma3":
            w.add_tensor(p + "post_attention_norm.weight", norm_weight(rng, d))
            w.add_tensor(p + "post_ffw_norm.weight", norm_weight(rng, d))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# dim, hidden, layers, heads, kv heads, head width
SMALL = {"llama": (64, 128, 2, 4, 2, 16), "qwen2": (64, 128, 2, 4, 2, 16),
         "qwen3": (64, 128, 2, 4, 2, 32), "gemma3": (64, 128, 7, 2, 1, 32)}
# K-quants need rows of whole 256-weight blocks
KQ = {"llama": (256, 256, 2, 4, 2, 64), "qwen2": (256, 256, 2, 4, 2, 64),
      "qwen3": (256, 256, 2, 2, 1, 128), "gemma3": (256, 256, 6, 2, 1, 128)}
# the shapes of Llama-3.2-1B, Qwen2.5-0.5B, Qwen3-0.6B and Gemma3-1B, their
# vocabularies' sizes, tied as theirs are
BIG = {"llama": (2048, 8192, 16, 32, 8, 64), "qwen2": (896, 4864, 24, 14, 2, 64),
       "qwen3": (1024, 3072, 28, 16, 8, 128), "gemma3": (1152, 6912, 26, 4, 1, 256)}
BIG_VOCAB = {"llama": 128256, "qwen2": 151936, "qwen3": 151936, "gemma3": 262144}

if __name__ == "__main__":
    out = sys.argv[1]
    big = len(sys.argv) > 2 and sys.argv[2] == "big"
    for i, arch in enumerate(["llama", "qwen2", "qwen3", "gemma3"]):
        if big:
            write("%s/%s-big-f32.gguf" % (out, arch), arch, BIG[arch], 100 + i, BIG_VOCAB[arch])
        else:
            write("%s/%s-f32.gguf" % (out, arch), arch, SMALL[arch], 1 + i)
            write("%s/%s-kq-f32.gguf" % (out, arch), arch, KQ[arch], 11 + i)
    if not big:
        write("%s/gemma3-linear-f32.gguf" % out, "gemma3", SMALL["gemma3"], 5, rope_linear=8.0)
        # two sliding layers, then a global one, with their own base
        write("%s/gemma3-period-f32.gguf" % out, "gemma3", SMALL["gemma3"], 6, sliding_period=3, sliding_base=40000.0)
