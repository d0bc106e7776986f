/*
 * cimail - the text of a pipeline's result as mailed to the list.
 *
 * forgemail.c reads an MR's pipelines and, for each that finished on the
 * head of a mailed revision, mails its result in reply to that
 * revision's cover letter; this module writes the body:
 *
 *	Pipeline #124 for v2 (0123abcd4567) failed.
 *	https://gitlab.example.org/group/project/-/pipelines/124
 *
 *	Failed jobs:
 *	  unit-tests (stage test): https://.../-/jobs/811
 *	  lint (stage build, allowed to fail): https://.../-/jobs/812
 *
 *	The last lines of the log of unit-tests:
 *
 *	  | FAIL: test_parse
 *	  | make: *** [check] Error 1
 *
 * or "Pipeline #125 for v2 (0123abcd4567) passed." and its link.
 *
 * A job's log is hostile text (the runner's and the job's own output):
 * cimail_log_tail() keeps at most CIMAIL_TAIL_LINES lines and
 * CIMAIL_TAIL_BYTES bytes of its end, drops ANSI escape sequences (CSI,
 * OSC and the rest of ECMA-48's), GitLab's collapsible section markers
 * ("section_start:TIME:NAME"), what a carriage return overwrote on its
 * line, and then whatever utf8_clean() removes (C0 and C1 controls, DEL,
 * bidirectional overrides, broken UTF-8).
 *
 * Ownership: the caller's buffers.  Thread safe (no state).
 * Errors: 0 or PB_ELIMIT (the buffer's cap), as util/buf.h.
 */
#ifndef PB_OUTBOUND_CIMAIL_H
#define PB_OUTBOUND_CIMAIL_H

#include "forge/forge.h"
#include "util/buf.h"

#include <stddef.h>

#define CIMAIL_TAIL_LINES 20
#define CIMAIL_TAIL_BYTES 2048
/* The most failed jobs named one by one; the rest are counted. */
#define CIMAIL_JOBS_MAX 50

/* The statuses whose result is mailed: 1 success, 0 failed, -1 other. */
int cimail_passed(const char *status);

/*
 * The last lines of log[0..len), cleaned as above, appended to out (each
 * line without its end, joined by "\n", no final one).  An empty log
 * appends nothing.
 */
int cimail_log_tail(struct buf *out, const char *log, size_t len);

/*
 * The body of the result mail of pipeline p for revision rev.  jobs are
 * the pipeline's (NULL for a pipeline that passed); tail is the cleaned
 * end of the first failed job's log (NULL or "": not quoted), tail_note
 * why it is missing (NULL: nothing said).
 */
int cimail_body(struct buf *out, const struct forge_pipeline *p, int rev,
		const struct forge_job_list *jobs, const char *tail,
		const char *tail_note);

/* The first job that failed the pipeline (not allowed to fail), else the
 * first failed one; NULL: none. */
const struct forge_job *cimail_first_failed(const struct forge_job_list *jobs);

#endif
