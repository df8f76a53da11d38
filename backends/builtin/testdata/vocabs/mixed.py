#!/usr/bin/env python3
"""Writes mixed.jsonl: 1,500 strings, each 1 to 12 pieces drawn (seeded)
from the kinds of text tokenizers part on: contractions in any case,
digit runs, numbers with separators, spaces, tabs, newlines and CRLF,
no-break and zero-width spaces, combining marks and their composed forms,
ligatures, Cyrillic, CJK, Khmer, Arabic, Hebrew, Devanagari, emoji with
joiners and flags, punctuation runs, special-looking text (<|, |>,
<|im_start|>, <tool_call>), long runs, NUL, DEL and a byte-order mark.

usage: python3 mixed.py > mixed.jsonl
"""
import json
import random

PIECES = ["Hello", " world", "it's", "IT'S", "we'Ve", " 'll", "'d", "3", "33", "1234567", "3.14", "1,000", "٣٤", "²", "Ⅻ", "½",
          " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\u00a0", "\u3000", "\u200b", "\u200d", "é", "e\u0301", "Äpfel", "ﬁ", "Å", "Å",
          "нещо", "Москва", "東京", "我想在apple工作", "មាន", "مرحبا", "שלום", "ग्र", "🙂", "🚀", "👨‍👩‍👧", "🇫🇷", "🦙", "✅",
          "(", ")", "...", "!!!", "???", "```", "'''", "\"\"\"", "--", "==", "<", ">", "<|", "|>", "<|im_start|>", "<|eot_id|>", "<tool_call>", "<think>",
          "$", "€", "%", "#", "@", "_", "-", "/", "\\", "a", "A", "ab", "x" * 40, "1" * 30, " " * 17, "\n" * 5, "élève", "İ", "ß", "ǅ", "\x00", "\x7f", "\ufeff",
          "\U0001F9D1\u200d\U0001F4BB"]

random.seed(7)
out = set()
while len(out) < 1500:
    out.add("".join(random.choice(PIECES) for _ in range(random.randint(1, 12))))
for s in sorted(out):
    print(json.dumps(s, ensure_ascii=True))
