/* The per-rank analyses' results (hta.h) as bytes, so that a reader rank
 * of `mpirun -n N htamerge ingest` analyses the files it parses and rank 0
 * only decodes and stores them (collector/ingest_send.c ->
 * merger/ingest_mpi.c). Exact: every field, doubles bit for bit, so the
 * database is the same whichever process analysed. Not a durable format:
 * both ends are the same htamerge (a version byte refuses any other). */
#ifndef HM_ANALYSIS_HTA_CODEC_H
#define HM_ANALYSIS_HTA_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/hta.h"
#include "common/err.h"

/* Encodes r[0..n) into a new buffer (*buf owned by the caller, free()).
 * Returns 0 or HM_ENOMEM. */
int an_results_encode(const struct an_rank_result *r, int n, uint8_t **buf, size_t *len);

/* Decodes exactly n results from buf[0..len) into out[0..n) (zeroed
 * first; an_rank_result_clear each on success). Every length is checked:
 * HM_EFORMAT (with err->offset) on anything malformed, and then out holds
 * nothing to free. */
int an_results_decode(const uint8_t *buf, size_t len, struct an_rank_result *out, int n, struct hm_err *err);

#endif
