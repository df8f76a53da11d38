// Reference ids from llama.cpp's library: tokenizations of strings and
// greedy continuations of prompts, with each step's top-two logit margin,
// its five largest logits, and the first step's logits.
// usage: ref MODEL STRINGS PROMPTS NGEN CACHE > out.json   (files: one JSON
// string per line; CACHE f32 or f16, the KV cache's type)
//        ref VOCAB STRINGS > out.json   (a vocabulary-only GGUF: the
// strings' ids, and the tokens that end a generation)
//        ref VOCAB --pieces > out.txt   (each token's text as llama.cpp
// prints it without special tokens, in hex, a line each)
//
// The context runs with the KV cache CACHE names, as the engine keeps its
// own for the file (f32 for f32 weights, halves for quantized ones), and
// without flash attention, and the weights are not repacked (use_extra_bufts = false): on x86 with AVX2,
// llama.cpp's repacked Q4_K weights give a batched prompt's logits that
// differ from its own one-token path by up to 1.1 on some prompts, and the
// reference is the arithmetic llama.cpp does on every CPU.
#include "llama.h"
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <fstream>
#include <algorithm>
#include <cmath>
#include <cstdlib>

static std::vector<std::string> lines(const char *path) {
    std::ifstream f(path); std::vector<std::string> out; std::string l;
    while (std::getline(f, l)) {
        // each line is a JSON string; unescape \n \t \\ \" \uXXXX (BMP and pairs)
        std::string s; size_t i = 1;
        while (i + 1 < l.size()) {
            char c = l[i];
            if (c != '\\') { s += c; i++; continue; }
            char e = l[i+1]; i += 2;
            if (e == 'n') s += '\n'; else if (e == 't') s += '\t'; else if (e == 'r') s += '\r';
            else if (e == 'u') {
                unsigned cp = std::stoul(l.substr(i, 4), nullptr, 16); i += 4;
                if (cp >= 0xD800 && cp < 0xDC00) { unsigned lo = std::stoul(l.substr(i+2, 4), nullptr, 16); i += 6; cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00); }
                if (cp < 0x80) s += (char)cp;
                else if (cp < 0x800) { s += (char)(0xC0 | cp >> 6); s += (char)(0x80 | (cp & 63)); }
                else if (cp < 0x10000) { s += (char)(0xE0 | cp >> 12); s += (char)(0x80 | (cp >> 6 & 63)); s += (char)(0x80 | (cp & 63)); }
                else { s += (char)(0xF0 | cp >> 18); s += (char)(0x80 | (cp >> 12 & 63)); s += (char)(0x80 | (cp >> 6 & 63)); s += (char)(0x80 | (cp & 63)); }
            } else s += e;
        }
        out.push_back(s);
    }
    return out;
}

static std::vector<llama_token> tok(const llama_vocab *v, const std::string &s) {
    std::vector<llama_token> t(s.size() + 16);
    int n = llama_tokenize(v, s.data(), s.size(), t.data(), t.size(), true, false);
    t.resize(n < 0 ? 0 : n);
    return t;
}

static void ids(const std::vector<llama_token> &t) {
    printf("[");
    for (size_t i = 0; i < t.size(); i++) printf("%s%d", i ? "," : "", t[i]);
    printf("]");
}

// prints each string of the file at path's ids, a JSON array a line
static void tokenizations(const llama_vocab *v, const char *path) {
    auto strs = lines(path);
    for (size_t i = 0; i < strs.size(); i++) { printf(i ? ",\n" : "\n"); ids(tok(v, strs[i])); }
}

int main(int argc, char **argv) {
    if (argc != 3 && argc < 6) { fprintf(stderr, "usage: ref MODEL STRINGS PROMPTS NGEN CACHE, or ref VOCAB STRINGS\n"); return 2; }
    llama_backend_init();
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    auto mp = llama_model_default_params();
    mp.use_extra_bufts = false;
    mp.vocab_only = argc == 3;
    llama_model *m = llama_model_load_from_file(argv[1], mp);
    if (!m) { fprintf(stderr, "load failed\n"); return 1; }
    const llama_vocab *v = llama_model_get_vocab(m);
    if (argc == 3 && std::string(argv[2]) == "--pieces") {
        char buf[4096];
        for (llama_token t = 0; t < llama_vocab_n_tokens(v); t++) {
            int n = llama_token_to_piece(v, t, buf, sizeof buf, 0, false);
            for (int j = 0; j < n; j++) printf("%02x", (unsigned char)buf[j]);
            printf("\n");
        }
        llama_model_free(m);
        return 0;
    }
    if (argc == 3) {
        printf("{\"tokenize\":[");
        tokenizations(v, argv[2]);
        std::vector<llama_token> eog;
        for (llama_token t = 0; t < llama_vocab_n_tokens(v); t++) if (llama_vocab_is_eog(v, t)) eog.push_back(t);
        printf("],\n\"eog\":"); ids(eog); printf("}\n");
        llama_model_free(m);
        return 0;
    }
    int ngen = atoi(argv[4]);
    std::string cache = argv[5];
    if (cache != "f32" && cache != "f16") { fprintf(stderr, "CACHE is f32 or f16\n"); return 1; }
    ggml_type cacheType = cache == "f16" ? GGML_TYPE_F16 : GGML_TYPE_F32;
    printf("{\"cache\":\"%s\",\"tokenize\":[", cache.c_str());
    tokenizations(v, argv[2]);
    printf("],\n\"greedy\":[");
    auto prompts = lines(argv[3]);
    int nv = llama_vocab_n_tokens(v);
    for (size_t p = 0; p < prompts.size(); p++) {
        auto cp = llama_context_default_params();
        cp.n_ctx = 512; cp.n_batch = 512; cp.n_ubatch = 512; cp.n_threads = 2; cp.n_threads_batch = 2;
        cp.type_k = cacheType; cp.type_v = cacheType;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        cp.no_perf = true;
        llama_context *ctx = llama_init_from_model(m, cp);
        auto pt = tok(v, prompts[p]);
        printf(p ? ",\n" : "\n"); printf("{\"prompt\":"); ids(pt);
        llama_batch b = llama_batch_get_one(pt.data(), pt.size());
        if (llama_decode(ctx, b)) { fprintf(stderr, "decode failed\n"); return 1; }
        std::vector<llama_token> out; std::vector<float> margins, first;
        std::vector<std::vector<std::pair<int, float>>> tops;
        for (int s = 0; s < ngen; s++) {
            const float *lg = llama_get_logits_ith(ctx, -1);
            if (s == 0) first.assign(lg, lg + nv);
            int best = 0; for (int i = 1; i < nv; i++) if (lg[i] > lg[best]) best = i;
            float second = -INFINITY; for (int i = 0; i < nv; i++) if (i != best && lg[i] > second) second = lg[i];
            out.push_back(best); margins.push_back(lg[best] - second);
            std::vector<std::pair<int, float>> top;
            for (int i = 0; i < nv; i++) top.push_back({i, lg[i]});
            std::partial_sort(top.begin(), top.begin() + 5, top.end(), [](auto &a, auto &b) { return a.second > b.second; });
            top.resize(5);
            tops.push_back(top);
            llama_token t = best;
            llama_batch b1 = llama_batch_get_one(&t, 1);
            if (llama_decode(ctx, b1)) { fprintf(stderr, "decode failed\n"); return 1; }
        }
        printf(",\"ids\":"); ids(out);
        printf(",\"margins\":[");
        for (size_t i = 0; i < margins.size(); i++) printf("%s%.6g", i ? "," : "", margins[i]);
        printf("],\"top5\":[");
        for (size_t i = 0; i < tops.size(); i++) {
            printf("%s[", i ? "," : "");
            for (size_t j = 0; j < tops[i].size(); j++) printf("%s[%d,%.7g]", j ? "," : "", tops[i][j].first, tops[i][j].second);
            printf("]");
        }
        printf("],\"first_logits\":[");
        for (int i = 0; i < nv; i++) printf("%s%.7g", i ? "," : "", first[i]);
        printf("]}");
        llama_free(ctx);
    }
    printf("]}\n");
    llama_model_free(m);
    return 0;
}
