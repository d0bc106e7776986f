/*
 * testmode - run the milter's callbacks from files, without an MTA.
 *
 * `patchbridge-milter --test FILE.eml...` feeds each file through the
 * same session.h calls the libmilter glue makes - MAIL FROM, one call per
 * header field (folded lines kept, leading blanks of the value dropped as
 * Postfix does), end of header, the body in chunks, end of message - with
 * the loaded configuration's thread map and spool.  So a relevant mail is
 * really classified, parsed and spooled, and the X-Patchbridge header the
 * milter would add is printed, one line per file:
 *
 *	FILE: X-Patchbridge: reply group/project!12 v3 2/7; via=...; queued
 *	FILE: pass (not-bridged)
 *	FILE: loop (own-message-id)
 *	FILE: tempfail (spool)
 *
 * Like OpenDMARC's test mode, it exists so the callbacks' logic can be
 * tested and debugged from golden files.
 *
 * Needs a current configuration (mconf_install()) and mail_init().
 * Returns an exit code: EX_OK, EX_TEMPFAIL when a mail would have been
 * tempfailed, EX_NOINPUT when a file cannot be read.
 */
#ifndef PB_MILTER_TESTMODE_H
#define PB_MILTER_TESTMODE_H

/* sender: the envelope sender to pretend (NULL: the null sender);
 * queue_id: the {i} macro to pretend (NULL: none). */
int testmode_run(char **files, int nr, const char *sender,
		 const char *queue_id);

#endif
