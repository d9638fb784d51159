/* big_xfer_layout.h: the values and derived-datatype layouts of the large
 * transfer workloads (issue 17 item 5), shared by test/big_xfer.c (checks
 * them at test sizes) and bench/big_xfer.c (times them at full size).
 * XFER_DIE(msg): what to do when memory runs out (default: MPI_Abort). */
#ifndef BIG_XFER_LAYOUT_H
#define BIG_XFER_LAYOUT_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef XFER_DIE
#define XFER_DIE(msg) (fprintf(stderr, "big_xfer: %s\n", (msg)), MPI_Abort(MPI_COMM_WORLD, 1))
#endif

#define SENT 0xA5

/* ---- values ---------------------------------------------------------------- */

static inline uint32_t mix(uint32_t seed, uint64_t k)
{
    uint64_t x = (k + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t) seed * 0xBF58476D1CE4E5B9ull);
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    return (uint32_t) (x >> 32);
}

/* Primitive k of a buffer seeded `seed`: an int, or a double that is exact. */
static inline void prim_value(uint32_t seed, uint64_t k, int dbl, void *out)
{
    uint32_t v = mix(seed, k);
    if (dbl) {
        double d = (double) (v & 0xFFFFFF) + 0.5;
        memcpy(out, &d, sizeof(d));
    } else {
        memcpy(out, &v, sizeof(v));
    }
}

/* ---- a derived-datatype layout, also as an explicit list of primitives ---- */

typedef struct {
    const char *name;
    MPI_Datatype type;       /* committed */
    int count;               /* of type */
    size_t span;             /* bytes from the buffer start that count elements touch */
    size_t nprim;            /* primitives (ints, doubles), in type-map order */
    uint32_t *off;           /* byte offset of each */
    uint8_t *dbl;            /* 1: a double, 0: an int */
    uint8_t *covered;        /* span bytes: 1 where a primitive lies */
} layout_t;

static void layout_finish(layout_t *l)
{
    l->covered = calloc(l->span, 1);
    if (!l->covered) XFER_DIE("out of memory");
    for (size_t k = 0; k < l->nprim; k++) {
        memset(l->covered + l->off[k], 1, l->dbl[k] ? 8 : 4);
    }
}

/* n ints: blocks of 1, 2, 3 ints in turn, separated by gaps of 1 and 2 ints. */
static void layout_indexed(layout_t *l, size_t n)
{
    size_t nb = 0, k = 0, at = 0;
    int *len = malloc((n + 1) * sizeof(int)), *disp = malloc((n + 1) * sizeof(int));

    l->name = "indexed";
    l->nprim = n;
    l->off = malloc(n * sizeof(uint32_t));
    l->dbl = calloc(n, 1);
    if (!len || !disp || !l->off || !l->dbl) XFER_DIE("out of memory");
    while (k < n) {
        int b = 1 + (int) (nb % 3);
        if ((size_t) b > n - k) b = (int) (n - k);
        len[nb] = b;
        disp[nb] = (int) at;
        for (int j = 0; j < b; j++) l->off[k++] = (uint32_t) ((at + j) * 4);
        at += b + 1 + nb % 2;
        nb++;
    }
    MPI_Type_indexed((int) nb, len, disp, MPI_INT, &l->type);
    MPI_Type_commit(&l->type);
    l->count = 1;
    l->span = (size_t) (disp[nb - 1] + len[nb - 1]) * 4;
    free(len);
    free(disp);
    layout_finish(l);
}

/* n elements of {4 MPI_INT at 0, 8 MPI_DOUBLE at 24}, extent 96. */
static void layout_struct(layout_t *l, size_t n)
{
    int bl[2] = { 4, 8 };
    MPI_Aint disp[2] = { 0, 24 };
    MPI_Datatype types[2] = { MPI_INT, MPI_DOUBLE }, s;
    size_t k = 0;

    l->name = "struct";
    l->nprim = 12 * n;
    l->off = malloc(l->nprim * sizeof(uint32_t));
    l->dbl = malloc(l->nprim);
    if (!l->off || !l->dbl) XFER_DIE("out of memory");
    for (size_t e = 0; e < n; e++) {
        for (int j = 0; j < 4; j++) { l->off[k] = (uint32_t) (e * 96 + 4 * j); l->dbl[k++] = 0; }
        for (int j = 0; j < 8; j++) { l->off[k] = (uint32_t) (e * 96 + 24 + 8 * j); l->dbl[k++] = 1; }
    }
    MPI_Type_create_struct(2, bl, disp, types, &s);
    MPI_Type_create_resized(s, 0, 96, &l->type);
    MPI_Type_free(&s);
    MPI_Type_commit(&l->type);
    l->count = (int) n;
    l->span = n * 96;
    layout_finish(l);
}

static void layout_free(layout_t *l)
{
    MPI_Type_free(&l->type);
    free(l->off);
    free(l->dbl);
    free(l->covered);
}

/* Write the layout's primitives of seed `seed` into buf (other bytes untouched). */
static void layout_fill(const layout_t *l, char *buf, uint32_t seed)
{
    for (size_t k = 0; k < l->nprim; k++) prim_value(seed, k, l->dbl[k], buf + l->off[k]);
}

/* Primitives of seed `seed` where the layout puts them, SENT everywhere else. */
static size_t layout_check(const layout_t *l, const char *buf, uint32_t seed, size_t *first)
{
    size_t bad = 0;
    char v[8];
    *first = (size_t) -1;
    for (size_t k = 0; k < l->nprim; k++) {
        size_t w = l->dbl[k] ? 8 : 4;
        prim_value(seed, k, l->dbl[k], v);
        if (memcmp(buf + l->off[k], v, w)) {
            if (!bad++) *first = l->off[k];
        }
    }
    for (size_t i = 0; i < l->span; i++) {
        if (!l->covered[i] && (uint8_t) buf[i] != SENT) {
            if (!bad++) *first = i;
        }
    }
    return bad;
}

#endif
