/*
 * subject - the patch tag of a Subject line.
 *
 * Reads what `git format-patch` and list conventions put in a subject:
 *
 *   Re: [LTP] [PATCH v2 1/4] lib: Add tst_fd iterator
 *   Re: [Intel-wired-lan] [RESEND PATCH net 1/2] iavf: ...
 *   [PATCHv2 nf-next 0/6] netfilter: ...     [3/3] ASoC: ...
 *
 * Reply markers (Re:, RE:, AW:, Sv:, R:, Odp:, ΑΠ:, Отв:, 答复:, 返信:
 * ... in the forms of every locale's mail clients, repeated or not, with
 * a count "Re[2]:", "Re^2:", a blank before the colon "RE :", in
 * brackets "[Re]") anywhere before the tag set `reply`, forward markers
 * (Fwd:, WG:, TR:, Enc: ...) `forward`.  A marker that is also a word of
 * a title ("R: the R language", "I: ...", "Ref: ...") or is written
 * without its colon ("Re [PATCH]") counts only when a patch tag or a
 * full marker follows it; a subject that opens with the tag is never a
 * reply.  List tags and other brackets
 * ([LTP], [External Mail], [Set 8]) are skipped; the bracket that holds
 * PATCH or RFC, or a bare N/M counter, is the tag.  Its text, with
 * whitespace collapsed, is `prefix`; `version` comes from vN or PATCHvN
 * (1 when absent), `index`/`total` from N/M (1/1 for a tag without a
 * counter).  Without a tag, prefix is "" and version, index and total
 * are -1 (JSON null).
 *
 * Ownership: subject_parse() fills an embedded struct; subject_release()
 * frees its strings.  Pure, bounded and thread-safe; it never fails on
 * bad input (a subject with no tag is still a subject).
 */
#ifndef PB_MAIL_SUBJECT_H
#define PB_MAIL_SUBJECT_H

#include <stddef.h>

/* Cap on the subject bytes looked at (RFC 5322 allows folding forever). */
#define SUBJECT_MAX 4096

struct subject {
	char *prefix; /* tag text without brackets, "" when none */
	char *title; /* what follows the tag (or the whole subject) */
	int version; /* vN; 1 when a tag has none; -1 without a tag */
	int index; /* N of N/M; -1 without a tag */
	int total; /* M of N/M; -1 without a tag */
	int reply; /* a reply marker (Re: ...) came before the tag */
	int forward; /* a forward marker (Fwd: ...) came before it */
	int has_tag; /* a PATCH/RFC tag or a counter was found */
	int rfc; /* the tag says RFC */
	int resend; /* the tag says RESEND */
};

void subject_init(struct subject *s);
void subject_release(struct subject *s);

/* Parse text[0..len) (UTF-8, already RFC 2047 decoded). Returns 0. */
int subject_parse(struct subject *out, const char *text, size_t len);

#endif
