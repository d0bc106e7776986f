/*
 * configdoc - the parameter table written out as text.
 *
 * The documentation of every parameter (the README's Markdown tables and
 * the PARAMETERS section of patchbridge.conf(5)), and the formatting of
 * values back into the file's syntax that the documentation and
 * config.c's messages share.  It reads the table only through config.h.
 *
 * Ownership: everything is appended to a caller's buffer.
 *
 * Thread safety: no state; callable from any thread.
 *
 * Errors: configdoc_markdown() and configdoc_man() return PB_ELIMIT (with
 * err_set()) when the text does not fit in out; the appenders leave a
 * full buffer's sticky error to the caller's check.
 */
#ifndef PB_CORE_CONFIGDOC_H
#define PB_CORE_CONFIGDOC_H

#include "core/config.h"
#include "util/buf.h"

#include <stdint.h>

/*
 * Append v of type t as the file would spell it: a duration or a size in
 * the largest unit that divides it exactly (500ms, 30s, 5m, 16M), any
 * other number in decimal.
 */
void configdoc_number(struct buf *out, enum config_type t, int64_t v);
void configdoc_duration(struct buf *out, int64_t ms);
void configdoc_size(struct buf *out, int64_t bytes);

/* Append the words of a NULL-ended list, each between quote: "a, b, c". */
void configdoc_words(struct buf *out, const char *const *w, const char *quote);

/*
 * The documentation of every parameter: for each section a "### [name]"
 * heading and a Markdown table with one "| `key` | type | default |
 * bounds | description |" row per parameter.  The README's configuration
 * section is written from this.
 */
int configdoc_markdown(struct buf *out);

/*
 * The same for patchbridge.conf(5): for each section a ".SS [name]"
 * subsection and one ".TP" paragraph per parameter, in man(7) macros.
 */
int configdoc_man(struct buf *out);

/*
 * Append s as roff text: a backslash becomes \e, a '-' \- (so that
 * man(1) does not hyphenate option-like words or turn them into Unicode
 * hyphens), and `word` bold, as the Markdown cells mark literal values.
 * (metrics.c documents the metrics with it too.)
 */
void configdoc_man_text(struct buf *out, const char *s);

#endif
