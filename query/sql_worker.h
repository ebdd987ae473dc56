/* The SQL console's statements (POST /api/sql) in forked children: the
 * server keeps answering other requests while one runs, and a statement
 * that outlives its time limit is killed whatever SQLite is doing (one
 * long function call, e.g. instr() over megabyte strings, cannot be
 * interrupted by the progress handler). server.c hands the request over;
 * the child answers through api.c's qry_api_dispatch on its own connection. */
#ifndef HM_QUERY_SQL_WORKER_H
#define HM_QUERY_SQL_WORKER_H

#include <stddef.h>
#include <stdio.h>

struct event_base;
struct evhttp_request;

#define QRY_SQLW_MAX_RUNNING 2             /* statements at once; one more is answered 503 at once */
#define QRY_SQLW_GRACE_MS 1000             /* past the statement's time limit before SIGKILL */
#define QRY_SQLW_MAX_ANSWER (32 << 20)     /* bytes of JSON accepted from a child */

/* Sends a JSON answer on req with the server's headers (server.c). */
typedef void qry_sqlw_reply_fn(struct evhttp_request *req, int status, const char *json, size_t len);

struct qry_sqlw;

/* Creates the console's workers on base (borrowed). db_path (borrowed) is
 * opened afresh in each child; log (borrowed) gets the kills. NULL when
 * out of memory or when SIGCHLD cannot be watched. */
struct qry_sqlw *qry_sqlw_new(struct event_base *base, const char *db_path, qry_sqlw_reply_fn *reply,
                              FILE *log);

/* Runs the POST body (borrowed for the call; the child has its copy) as a
 * console statement in a child and answers req later, from the event loop:
 * the child's status and JSON (api.c's shapes: 200, 400, 403, ...), 504
 * when it ran past QRY_API_SQL_MS + QRY_SQLW_GRACE_MS and was killed, 400
 * for an answer over QRY_SQLW_MAX_ANSWER, 503 at once when
 * QRY_SQLW_MAX_RUNNING statements are running. A client that goes away
 * gets its child killed. */
void qry_sqlw_start(struct qry_sqlw *w, struct evhttp_request *req, const char *body, size_t len);

/* Kills and reaps every child, without answering (the server is going
 * down; evhttp_free drops the connections). Call before evhttp_free.
 * NULL does nothing. */
void qry_sqlw_free(struct qry_sqlw *w);

#endif
