// A C baseline for the builtin engine's speed: the forward pass of
// llama2.c's run.c (fp32) and runq.c (Q8_0, groups of 32), written from
// their published algorithms: plain loops, one OpenMP parallel-for per
// matmul, activations quantized once per input vector (Q, K and V share
// one, as do W1 and W3), greedy decoding from BOS, tok/s over the whole
// generation as run.c prints it. Weights are random: speed does not
// depend on them.
//
//   gcc -Ofast -march=native -fopenmp forward.c -lm -o forward
//   OMP_NUM_THREADS=1 ./forward DIM HIDDEN LAYERS HEADS KVHEADS VOCAB SEQ STEPS f32|q8
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GS 32
typedef struct { int8_t *q; float *s; } QT;

static int dim, hidden, layers, heads, kvheads, vocab, seq, q8;
static float *emb, *rms_att, *rms_ffn, *rms_final, *wq, *wk, *wv, *wo, *w1, *w2, *w3;
static QT qwq, qwk, qwv, qwo, qw1, qw2, qw3, qcls;
static float *x, *xb, *xb2, *hb, *hb2, *q, *att, *logits, *kc, *vc;
static QT xq, hq;

static float *rnd(long n) {
    float *p = malloc(n * sizeof(float));
    for (long i = 0; i < n; i++) p[i] = (rand() / (float)RAND_MAX - 0.5f) * 0.1f;
    return p;
}

static void quantize(QT *t, const float *x, long n) {
    for (long g = 0; g < n / GS; g++) {
        float amax = 0;
        for (int i = 0; i < GS; i++) amax = fmaxf(amax, fabsf(x[g * GS + i]));
        float s = amax / 127.0f;
        t->s[g] = s;
        for (int i = 0; i < GS; i++) t->q[g * GS + i] = (int8_t)roundf(s ? x[g * GS + i] / s : 0);
    }
}

static QT qnew(long n) { QT t = {malloc(n), malloc(n / GS * sizeof(float))}; return t; }
static QT qof(const float *w, long n) { QT t = qnew(n); quantize(&t, w, n); return t; }

static void matmul(float *out, const float *x, const float *w, int n, int d) {
    int i;
#pragma omp parallel for private(i)
    for (i = 0; i < d; i++) {
        float v = 0;
        for (int j = 0; j < n; j++) v += w[(long)i * n + j] * x[j];
        out[i] = v;
    }
}

static void matmulq(float *out, QT *x, QT *w, int n, int d) {
    int i;
#pragma omp parallel for private(i)
    for (i = 0; i < d; i++) {
        float v = 0;
        long in = (long)i * n;
        for (int j = 0; j <= n - GS; j += GS) {
            int32_t iv = 0;
            for (int k = 0; k < GS; k++) iv += ((int32_t)x->q[j + k]) * ((int32_t)w->q[in + j + k]);
            v += ((float)iv) * w->s[(in + j) / GS] * x->s[j / GS];
        }
        out[i] = v;
    }
}

// prep quantizes the input of the matmuls that follow, in Q8_0 mode.
static void prep(QT *xt, const float *x, int n) { if (q8) quantize(xt, x, n); }

static void mm(float *out, float *x, QT *xt, float *w, QT *wt, int n, int d) {
    if (q8) matmulq(out, xt, wt, n, d);
    else matmul(out, x, w, n, d);
}

static void rmsnorm(float *o, const float *x, const float *w, int n) {
    float ss = 0;
    for (int j = 0; j < n; j++) ss += x[j] * x[j];
    ss = 1.0f / sqrtf(ss / n + 1e-5f);
    for (int j = 0; j < n; j++) o[j] = w[j] * (ss * x[j]);
}

static void softmax(float *x, int n) {
    float m = x[0], s = 0;
    for (int i = 1; i < n; i++) m = fmaxf(m, x[i]);
    for (int i = 0; i < n; i++) { x[i] = expf(x[i] - m); s += x[i]; }
    for (int i = 0; i < n; i++) x[i] /= s;
}

static float *forward(int token, int pos) {
    int hs = dim / heads, kvd = kvheads * hs, kvmul = heads / kvheads;
    memcpy(x, emb + (long)token * dim, dim * sizeof(float));
    for (int l = 0; l < layers; l++) {
        long lo = (long)l * dim;
        rmsnorm(xb, x, rms_att + lo, dim);
        float *k = kc + ((long)l * seq + pos) * kvd, *v = vc + ((long)l * seq + pos) * kvd;
        QT sq = {qwq.q + lo * dim, qwq.s + lo * dim / GS}, sk = {qwk.q + (long)l * kvd * dim, qwk.s + (long)l * kvd * dim / GS},
           sv = {qwv.q + (long)l * kvd * dim, qwv.s + (long)l * kvd * dim / GS};
        prep(&xq, xb, dim);
        mm(q, xb, &xq, wq + lo * dim, &sq, dim, dim);
        mm(k, xb, &xq, wk + (long)l * kvd * dim, &sk, dim, kvd);
        mm(v, xb, &xq, wv + (long)l * kvd * dim, &sv, dim, kvd);
        for (int i = 0; i < dim; i += 2) {
            int hd = i % hs;
            float f = 1.0f / powf(10000.0f, hd / (float)hs), a = pos * f, fr = cosf(a), fi = sinf(a);
            for (int r = 0; r < (i < kvd ? 2 : 1); r++) {
                float *vec = r == 0 ? q : k, v0 = vec[i], v1 = vec[i + 1];
                vec[i] = v0 * fr - v1 * fi;
                vec[i + 1] = v0 * fi + v1 * fr;
            }
        }
        int h;
#pragma omp parallel for private(h)
        for (h = 0; h < heads; h++) {
            float *qh = q + h * hs, *ah = att + (long)h * seq;
            for (int t = 0; t <= pos; t++) {
                float *kt = kc + ((long)l * seq + t) * kvd + (h / kvmul) * hs, s = 0;
                for (int i = 0; i < hs; i++) s += qh[i] * kt[i];
                ah[t] = s / sqrtf(hs);
            }
            softmax(ah, pos + 1);
            float *o = xb + h * hs;
            memset(o, 0, hs * sizeof(float));
            for (int t = 0; t <= pos; t++) {
                float *vt = vc + ((long)l * seq + t) * kvd + (h / kvmul) * hs;
                for (int i = 0; i < hs; i++) o[i] += ah[t] * vt[i];
            }
        }
        QT so = {qwo.q + lo * dim, qwo.s + lo * dim / GS};
        prep(&xq, xb, dim);
        mm(xb2, xb, &xq, wo + lo * dim, &so, dim, dim);
        for (int i = 0; i < dim; i++) x[i] += xb2[i];
        rmsnorm(xb, x, rms_ffn + lo, dim);
        long lh = (long)l * hidden * dim;
        QT s1 = {qw1.q + lh, qw1.s + lh / GS}, s2 = {qw2.q + lh, qw2.s + lh / GS}, s3 = {qw3.q + lh, qw3.s + lh / GS};
        prep(&xq, xb, dim);
        mm(hb, xb, &xq, w1 + lh, &s1, dim, hidden);
        mm(hb2, xb, &xq, w3 + lh, &s3, dim, hidden);
        for (int i = 0; i < hidden; i++) hb[i] = hb[i] / (1.0f + expf(-hb[i])) * hb2[i];
        prep(&hq, hb, hidden);
        mm(xb, hb, &hq, w2 + lh, &s2, hidden, dim);
        for (int i = 0; i < dim; i++) x[i] += xb[i];
    }
    rmsnorm(x, x, rms_final, dim);
    prep(&xq, x, dim);
    mm(logits, x, &xq, emb, &qcls, dim, vocab);
    return logits;
}

int main(int argc, char **argv) {
    if (argc != 10) { fprintf(stderr, "usage: forward DIM HIDDEN LAYERS HEADS KVHEADS VOCAB SEQ STEPS f32|q8\n"); return 2; }
    dim = atoi(argv[1]); hidden = atoi(argv[2]); layers = atoi(argv[3]); heads = atoi(argv[4]);
    kvheads = atoi(argv[5]); vocab = atoi(argv[6]); seq = atoi(argv[7]);
    int steps = atoi(argv[8]); q8 = strcmp(argv[9], "q8") == 0;
    int kvd = kvheads * (dim / heads);
    srand(1);
    emb = rnd((long)vocab * dim); rms_att = rnd((long)layers * dim); rms_ffn = rnd((long)layers * dim); rms_final = rnd(dim);
    wq = rnd((long)layers * dim * dim); wk = rnd((long)layers * dim * kvd); wv = rnd((long)layers * dim * kvd);
    wo = rnd((long)layers * dim * dim); w1 = rnd((long)layers * dim * hidden); w2 = rnd((long)layers * dim * hidden); w3 = rnd((long)layers * dim * hidden);
    if (q8) {
        qwq = qof(wq, (long)layers * dim * dim); qwk = qof(wk, (long)layers * dim * kvd); qwv = qof(wv, (long)layers * dim * kvd);
        qwo = qof(wo, (long)layers * dim * dim); qw1 = qof(w1, (long)layers * dim * hidden); qw2 = qof(w2, (long)layers * dim * hidden);
        qw3 = qof(w3, (long)layers * dim * hidden); qcls = qof(emb, (long)vocab * dim);
        xq = qnew(dim); hq = qnew(hidden);
    }
    x = calloc(dim, 4); xb = calloc(dim, 4); xb2 = calloc(dim, 4); q = calloc(dim, 4);
    hb = calloc(hidden, 4); hb2 = calloc(hidden, 4); att = calloc((long)heads * seq, 4); logits = calloc(vocab, 4);
    kc = calloc((long)layers * seq * kvd, 4); vc = calloc((long)layers * seq * kvd, 4);
    struct timespec t0, t1;
    int token = 1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int pos = 0; pos < steps; pos++) {
        float *lg = forward(token, pos);
        int best = 0;
        for (int i = 1; i < vocab; i++) if (lg[i] > lg[best]) best = i;
        token = best;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("achieved tok/s: %f\n", steps / s);
    return 0;
}
