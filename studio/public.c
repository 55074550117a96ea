/* public: anonymous sessions and tokens (public.h). */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "public.h"
#include "studio.h"

/* ---- tokens ---- */

void token_digest(const void *p, size_t n, unsigned char out[32]) {
    unsigned int k = 32;
    EVP_Digest(p, n, out, &k, EVP_sha256(), NULL);
}

int token_new(char *out, size_t n) {
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char raw[33] = {0};
    if (n < TOKEN_LEN + 1 || getrandom(raw, 32, 0) != 32) return -1;
    size_t j = 0;
    for (int i = 0; i < 33; i += 3) {
        unsigned v = (unsigned)raw[i] << 16 | (unsigned)raw[i + 1] << 8 | raw[i + 2];
        for (int k = 0; k < 4 && j < TOKEN_LEN; k++) out[j++] = b64[(v >> (18 - 6 * k)) & 63];
    }
    out[j] = 0;
    OPENSSL_cleanse(raw, sizeof raw);
    return 0;
}

int token_is(const unsigned char want[32], const char *given, size_t n) {
    unsigned char d[32];
    token_digest(given, n, d);
    return CRYPTO_memcmp(d, want, 32) == 0;
}

/* ---- sessions ---- */

typedef struct session {
    unsigned char digest[32];
    char ws[49];
    double expires;
    int used;
} session;

struct pub {
    char root[4096];
    int lease_s, max;
    pthread_mutex_t mu;
    session *s; /* (max) */
};

pub *pub_open(const char *root, int lease_s, int max) {
    pub *p = calloc(1, sizeof *p);
    if (!p || !(p->s = calloc((size_t)max, sizeof *p->s))) {
        free(p);
        return NULL;
    }
    snprintf(p->root, sizeof p->root, "%s", root);
    p->lease_s = lease_s, p->max = max;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

void pub_close(pub *p) {
    if (!p) return;
    OPENSSL_cleanse(p->s, (size_t)p->max * sizeof *p->s);
    free(p->s);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int pub_create(pub *p, char token[44], char ws[49], double *expires, char *err, size_t n) {
    unsigned char raw[24];
    if (token_new(token, 44) || getrandom(raw, sizeof raw, 0) != sizeof raw) return snprintf(err, n, "no random bytes"), -1;
    for (int i = 0; i < 24; i++) snprintf(ws + 2 * i, 3, "%02x", raw[i]); /* not derived from the token */
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/sessions/%s", p->root, ws);
    if (mkdir(dir, 0700) || (snprintf(dir, sizeof dir, "%s/sessions/%s/runs", p->root, ws), mkdir(dir, 0700))) {
        snprintf(err, n, "cannot create the session's directory %s: %s", dir, strerror(errno));
        return -1;
    }
    pthread_mutex_lock(&p->mu);
    session *free_slot = NULL;
    for (int i = 0; i < p->max && !free_slot; i++)
        if (!p->s[i].used) free_slot = &p->s[i];
    if (free_slot) {
        token_digest(token, TOKEN_LEN, free_slot->digest);
        snprintf(free_slot->ws, sizeof free_slot->ws, "%s", ws);
        free_slot->expires = *expires = studio_now() + p->lease_s;
        free_slot->used = 1;
    }
    pthread_mutex_unlock(&p->mu);
    if (free_slot) return 0;
    snprintf(dir, sizeof dir, "%s/sessions/%s", p->root, ws);
    studio_rmtree(dir);
    OPENSSL_cleanse(token, 44);
    return 1;
}

int pub_find(pub *p, const char *given, size_t n, char ws[49], double *expires) {
    if (n != TOKEN_LEN) return 1;
    unsigned char d[32];
    token_digest(given, n, d);
    int rc = 1;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->max; i++) { /* every slot, each compared in constant time */
        int hit = p->s[i].used & (CRYPTO_memcmp(d, p->s[i].digest, 32) == 0);
        if (hit && rc == 1) {
            snprintf(ws, 49, "%s", p->s[i].ws);
            *expires = p->s[i].expires;
            rc = studio_now() < p->s[i].expires ? 0 : 2;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int pub_count(pub *p) {
    int k = 0;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->max; i++) k += p->s[i].used;
    pthread_mutex_unlock(&p->mu);
    return k;
}
