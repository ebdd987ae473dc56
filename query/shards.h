/* Reading a sharded ingest's files (merger/ingest_shards.h): the index
 * answers reports and whole-run views; the slices of a rank are in its
 * shard, which this opens, read-only, by the index's `shards` and
 * `rank_shards` tables. A shard that is missing, or of another size than
 * the index recorded (incomplete, or replaced), is an error naming the
 * file; the rest of the run stays readable. */
#ifndef HM_QUERY_SHARDS_H
#define HM_QUERY_SHARDS_H

#include <stddef.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"

/* How many shards the file at db indexes: 0 for an ordinary file. */
int qry_shard_count(sqlite3 *db);

/* The path of rank's shard (relative paths are taken from the index's
 * folder, index_path's) into buf; checks it is there and complete.
 * 0, HM_EEMPTY (no such rank, or db is no index) or HM_EIO (missing or
 * incomplete: err names the file and the rank). */
int qry_shard_of(sqlite3 *db, const char *index_path, int rank, char *buf, size_t cap, struct hm_err *err);

/* qry_open of rank's shard, or NULL with err filled (as qry_shard_of). */
sqlite3 *qry_shard_open(sqlite3 *db, const char *index_path, int rank, struct hm_err *err);

/* For `report summary` of an index: adds "shards", one object per shard
 * (host, path, ranks, status: "ok", "missing" or "incomplete"), to doc,
 * so that a shard gone shows with its ranks. Nothing for another file.
 * 0 or HM_ENOMEM. */
int qry_shards_status(sqlite3 *db, cJSON *doc, struct hm_err *err);

#endif
