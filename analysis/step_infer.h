/* Steps inferred from the periodic structure of an event stream, for
 * programs without any step marker (C++/CUDA, other frameworks).
 *
 * Input: the stream as a sequence of symbols (collective op+size, NVTX
 * name, kernel name) in program order, optionally with each event's start
 * and end. Output: the positions where steps start.
 *
 * Method: a training loop repeats one block of events per step, so the
 * best "anchor" is a symbol that occurs once per block: cutting the stream
 * at its occurrences gives identical blocks. For every symbol, the blocks
 * between its consecutive occurrences are hashed (polynomial prefix
 * hashes: O(1) per block) and the most frequent (length, hash) block is
 * found by sorting; its coverage (length x count) scores the symbol. A
 * symbol occurring k times per step gives k different blocks and loses to
 * one occurring once; noise breaks only the blocks it falls in. The sum of
 * occurrences over all symbols is n, so the whole search is O(n log n).
 * The winner's block may begin anywhere within the true step (any symbol
 * occurring once per step scores the same), so the cut is then rotated
 * within the block: with times, to the offset with the largest total gap
 * before it (steps are separated by data loading, optimizer and host
 * work); without, to the offset that starts the first step earliest.
 * A period is accepted when its repeated block covers at least half of
 * the stream from the first step on and repeats at least twice.
 * Anchor occurrences closer than half a block to the previous cut (noise)
 * do not cut. Pure computation: no I/O. */
#ifndef HM_ANALYSIS_STEP_INFER_H
#define HM_ANALYSIS_STEP_INFER_H

#include <stddef.h>
#include <stdint.h>

struct an_period {
    size_t block;      /* events per step (the repeated block's length); 0 if none */
    size_t support;    /* blocks equal to the repeated one */
    size_t *cuts;      /* owned: stream positions where steps start, ascending */
    size_t ncuts;
};

/* Finds the period of sym[0..n) and its cuts; ts/end (both or neither may
 * be NULL) give each event's time span, used to place the cut. Returns 0
 * (out->ncuts == 0 when no period was found) or HM_ENOMEM. */
int an_infer_period(const uint64_t *sym, const int64_t *ts, const int64_t *end, size_t n,
                    struct an_period *out);

void an_period_free(struct an_period *p);

#endif
