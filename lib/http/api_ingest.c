/* SPDX-License-Identifier: MIT */
/* Pushes: one handler for every row of lib/ingest/protocol.h's table (cprof's
 * /api/v1/push, Pyroscope's /ingest, Parca's writeraw): the row's decoder makes
 * the batch, this commits it and answers; the counters and the log of what is
 * rejected. */
#include "http/api_impl.h"

/* ---- writing handlers ---- */

/* A refusal with status and message, in the row's way (cprof's JSON error
 * when it says none); the message is kept for the log of what is rejected. */
static void refuse(struct cp_req *r, struct cp_resp *out, const struct cp_ingest_protocol *pr, int status,
		   const char *msg, char *reason, size_t size)
{
	snprintf(reason, size, "%s", msg);
	if (pr->respond)
		pr->respond(r, out, status, msg);
	else
		cp_resp_error(out, status, "%s", msg);
}

static void ingest_done(struct cp_api *s, struct cp_req *r, struct cp_resp *out, const struct cp_ingest_protocol *pr,
			size_t api, int err, const char *msg, const struct cp_ingest_batch *b, char *reason, size_t size)
{
	char why[600];

	if (err) {
		atomic_fetch_add(&s->errors[api], 1);
		snprintf(why, sizeof(why), "nothing was stored: %s", msg);
		refuse(r, out, pr, err == -ESHUTDOWN ? 503 : err == -EINVAL || err == -ENAMETOOLONG ? 422 : 500, why, reason,
		       size);
		return;
	}
	atomic_fetch_add(&s->profiles[api], b->profiles);
	atomic_fetch_add(&s->samples[api], b->samples);
	atomic_fetch_add(&s->bytes[api], b->bytes);
	if (pr->respond)
		pr->respond(r, out, 200, NULL);
	else if (pr->answer)
		cp_resp_text(out, 200, "application/json", "%s", pr->answer);
	else
		cp_resp_text(out, 200, "application/json", "{\"profiles\":%zu,\"samples\":%zu}\n", b->profiles, b->samples);
}

/* Logs a push the handler refused (out->status >= 400) with its reason: one
 * line a second per API at most, the next line counting those left out. */
static void log_rejected(struct cp_api *s, size_t api, struct cp_req *r, const struct cp_resp *out, const char *reason)
{
	const char *name = cp_req_arg(r, "name");
	int64_t now = cp_mono_ns();
	uint64_t skipped;
	char more[64] = "", line[768], *p;

	if (out->status < 400)
		return;
	pthread_mutex_lock(&s->rlock);
	if (s->rlast[api] && now - s->rlast[api] < 1000000000) {
		s->rsuppressed[api]++;
		pthread_mutex_unlock(&s->rlock);
		return;
	}
	s->rlast[api] = now;
	skipped = s->rsuppressed[api];
	s->rsuppressed[api] = 0;
	pthread_mutex_unlock(&s->rlock);
	if (skipped)
		snprintf(more, sizeof(more), " (%" PRIu64 " more rejected since the last line)", skipped);
	snprintf(line, sizeof(line), "rejected a %s push to %s%s%.128s (%d): %.300s%s", api_name(s, api),
		 cp_req_path(r), name ? " name=" : "", name ? name : "", out->status,
		 reason && *reason ? reason : "no reason given", more);
	for (p = line; *p; p++) /* what clients sent stays on one line */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	cp_log("serve", CP_LOG_WARN, "%s", line);
}

void api_log_rejected_left(struct cp_api *s)
{
	for (size_t api = 0; api < s->napis; api++)
		if (s->rsuppressed[api])
			cp_log("serve", CP_LOG_WARN, "%" PRIu64 " more %s pushes were rejected since the last line",
			       s->rsuppressed[api], api_name(s, api));
}

/* a body the decoders refused (errno): over a limit of lib/decode_limits.h
 * 413, while other bodies take the decompression budget 503, else 400 */
static int decode_status(int err)
{
	return err == EFBIG ? 413 : err == EBUSY ? 503 : 400;
}

void api_h_ingest(struct cp_req *r, struct cp_resp *out, void *arg)
{
	struct cp_api *s = arg;
	const struct cp_ingest_protocol *pr = cp_ingest_protocol_at(cp_req_method(r), cp_req_path(r));
	struct cp_ingest_batch b = { 0 };
	size_t api;
	char msg[512], reason[640] = "";
	int err;

	if (!pr) { /* routed here only for a row's method and path */
		cp_resp_error(out, 500, "no ingest protocol serves %s %.64s", cp_req_method(r), cp_req_path(r));
		return;
	}
	api = (size_t)(pr - cp_ingest_protocols);
	if ((err = pr->decode(r, &b))) {
		atomic_fetch_add(&s->errors[api], 1);
		refuse(r, out, pr, b.internal ? 500 : decode_status(-err), cp_errmsg(-err), reason, sizeof(reason));
	} else {
		err = cp_shared_append(s->store, b.a, b.n, msg, sizeof(msg));
		ingest_done(s, r, out, pr, api, err, msg, &b, reason, sizeof(reason));
	}
	cp_ingest_batch_release(&b);
	log_rejected(s, api, r, out, reason);
}
