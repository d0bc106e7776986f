/*
 * store_query - the statements and the query layer of the state store
 * (storeq.h): every SQL statement of the store's tables, the
 * PostgreSQL variants, and the binding and reading of rows.
 */

#include "state/storeq.h"
#include "util/err.h"
#include "util/log.h"
#include "util/printable.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Column lists shared by the SELECTs and the row readers below. */
#define MAIL_COLS                                                       \
	"message_id, project, iid, revision, patch, total, kind,"       \
	" commit_sha, base_sha, start_sha, head_sha, version_id, diff," \
	" discussion_id, note_id, state, created, sent, sent_by"
/* What a mail row reads: its columns and how it was known sent. */
#define MAIL_READ_COLS MAIL_COLS ", sent_how"
#define REV_COLS                                                 \
	"project, iid, revision, head_sha, base_sha, start_sha," \
	" version_id, patch_id, patches, cover_msgid, state, created, sent"
#define IN_COLS                                                       \
	"message_id, spool_name, project, iid, revision, patch,"      \
	" classification, state, attempts, next_attempt, last_error," \
	" created, updated, spooled_by, claimed_by, lease_until"
/* The queue joined with the thread map. */
#define OUT_SELECT_COLS(message)                                      \
	"SELECT o.message_id, t.project, t.iid, t.revision, t.patch," \
	" o.envelope_from, o.recipients, " message ", o.state,"       \
	" o.attempts, o.next_attempt, o.last_error, o.created,"       \
	" o.updated, o.claimed_by, o.lease_until, o.handed"           \
	" FROM outmail o"                                             \
	" JOIN thread_map t ON t.message_id = o.message_id"
#define OUT_SELECT OUT_SELECT_COLS("o.message")
#define OUT_SELECT_NO_MESSAGE OUT_SELECT_COLS("NULL")
#define SUB_COLS                                                  \
	"series_id, sender, project, version, total, state, iid," \
	" created, updated"
#define SUBM_COLS "message_id, series_id, patch, message, created"
#define SUB_LIST_DUE(key2, key3)                         \
	"SELECT " SUB_COLS " FROM submissions s"         \
	" WHERE project = ?5 AND state = 'collecting'"   \
	" AND created <= ?1"                             \
	" AND NOT EXISTS (SELECT 1 FROM notices n"       \
	"  WHERE n.message_id = " key2 " || s.series_id" \
	"  OR n.message_id = " key3 " || s.series_id)"   \
	" ORDER BY created, series_id LIMIT ?4"
#define ACT_COLS                                                  \
	"message_id, action_index, kind, marker, state, note_id," \
	" discussion_id, attempts, last_error, created, updated, host"
#define NOTICE_COLS \
	"message_id, notice_id, recipient, decision, reasons, created"

/*
 * Claim the next due inbound row (?3 is this host, ?2 the time now):
 * received or failed and due (?1) - a row another host journaled only
 * once it has been due for a lease (?5: its daemon is down or stuck) -
 * or applying under a claim that expired: the host that claimed it died
 * or hangs, and the forge action journal makes applying it again safe.
 * One statement, so the pick and the update are one write; on
 * PostgreSQL the pick skips rows another claimer has locked, and the
 * outer WHERE is checked again on the row it locked.
 */
#define IN_DUE                                                     \
	"((state IN ('received', 'failed') AND next_attempt <= ?1" \
	" AND (spooled_by IS NULL OR spooled_by = ?3"              \
	" OR next_attempt <= ?5))"                                 \
	" OR (state = 'applying' AND lease_until <= ?2))"
#define IN_CLAIM_SET                                               \
	"UPDATE inbound SET state = 'applying',"                   \
	" attempts = attempts + 1, updated = ?2, claimed_by = ?3," \
	" lease_until = ?4"
#define IN_CLAIM_ORDER " ORDER BY next_attempt, created, rowid LIMIT 1"
/*
 * PostgreSQL: each kind of due row from its own index, in claim order, so
 * a claim reads a few index entries (and marks those of finished rows
 * dead as it passes) instead of collecting every candidate; a row another
 * claimer holds is skipped, not waited for.
 */
#define IN_CLAIM_PG                                                                   \
	"WITH fresh AS (SELECT message_id, next_attempt, created, rowid"              \
	" FROM inbound WHERE state IN ('received', 'failed')"                         \
	" AND next_attempt <= ?1 AND (spooled_by IS NULL"                             \
	" OR spooled_by = ?3 OR next_attempt <= ?5)" IN_CLAIM_ORDER                   \
	" FOR UPDATE SKIP LOCKED),"                                                   \
	" expired AS (SELECT message_id, next_attempt, created, rowid"                \
	" FROM inbound WHERE state = 'applying' AND lease_until <= ?2" IN_CLAIM_ORDER \
	" FOR UPDATE SKIP LOCKED) " IN_CLAIM_SET                                      \
	" WHERE message_id = (SELECT message_id FROM"                                 \
	" (SELECT * FROM fresh UNION ALL SELECT * FROM expired) due" IN_CLAIM_ORDER   \
	") AND " IN_DUE " RETURNING " IN_COLS

static const char *const stmt_sql[S_NR] = {
	[S_USER_VERSION] = "PRAGMA user_version",

	[S_MAIL_PUT] = "INSERT INTO thread_map (" MAIL_COLS ")"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
		       " ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
		       " ON CONFLICT (message_id) DO NOTHING",
	/* (the right-hand sides see the row as it was) */
	[S_MAIL_MARK_SENT] = "UPDATE thread_map SET state = 'sent',"
			     " sent = COALESCE(sent, ?2),"
			     " sent_by = COALESCE(sent_by, ?3),"
			     " sent_how = CASE WHEN sent IS NULL THEN ?4"
			     " ELSE sent_how END"
			     " WHERE message_id = ?1",
	[S_MAIL_GET] = "SELECT " MAIL_READ_COLS " FROM thread_map"
		       " WHERE message_id = ?1",
	[S_MAIL_FIND] = "SELECT " MAIL_READ_COLS " FROM thread_map"
			" WHERE project = ?1 AND iid = ?2 AND revision = ?3"
			" AND patch = ?4 AND kind IN ('cover', 'patch')",
	[S_MAIL_LIST_REVISION] =
		"SELECT " MAIL_READ_COLS " FROM thread_map"
		" WHERE project = ?1 AND iid = ?2 AND revision = ?3"
		" ORDER BY kind NOT IN ('cover', 'patch'), patch, created,"
		" rowid",
	[S_MAIL_BY_DISCUSSION] = "SELECT " MAIL_READ_COLS " FROM thread_map"
				 " WHERE project = ?1 AND discussion_id = ?2"
				 " ORDER BY created DESC, rowid DESC LIMIT 1",
	/* Each host's part (store_hosts): what it journaled, applied,
	 * holds and sent, and when it last did any of it. */
	[S_HOSTS] = "SELECT host, CAST(SUM(journaled) AS BIGINT),"
		    " CAST(SUM(applied) AS BIGINT),"
		    " CAST(SUM(applying) AS BIGINT),"
		    " CAST(SUM(sending) AS BIGINT), CAST(SUM(sent) AS BIGINT),"
		    " CAST(MAX(lease) AS BIGINT), CAST(MAX(at) AS BIGINT)"
		    " FROM (SELECT spooled_by AS host, 1 AS journaled,"
		    "  0 AS applied, 0 AS applying, 0 AS sending, 0 AS sent,"
		    "  0 AS lease, created AS at FROM inbound"
		    "  WHERE spooled_by IS NOT NULL"
		    " UNION ALL SELECT claimed_by, 0,"
		    "  CASE WHEN state = 'applied' THEN 1 ELSE 0 END,"
		    "  CASE WHEN state = 'applying' THEN 1 ELSE 0 END, 0, 0,"
		    "  CASE WHEN state = 'applying' THEN lease_until ELSE 0"
		    "  END, updated FROM inbound WHERE claimed_by IS NOT NULL"
		    " UNION ALL SELECT claimed_by, 0, 0, 0,"
		    "  CASE WHEN lease_until > 0 THEN 1 ELSE 0 END, 0,"
		    "  lease_until, updated FROM outmail"
		    "  WHERE claimed_by IS NOT NULL"
		    " UNION ALL SELECT sent_by, 0, 0, 0, 0, 1, 0, sent"
		    "  FROM thread_map WHERE sent_by IS NOT NULL) h"
		    " GROUP BY host ORDER BY host LIMIT ?1",
	/* The thread map from a time on, in pages (store_threadmap_mirror). */
	[S_MAIL_SINCE] = "SELECT " MAIL_READ_COLS " FROM thread_map"
			 " WHERE (created, message_id) > (?1, ?2)"
			 " ORDER BY created, message_id LIMIT ?3",
	[S_MIRROR_MAIL] = "INSERT INTO thread_map (" MAIL_COLS ")"
			  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
			  " ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
			  " ON CONFLICT DO NOTHING",
	[S_MIRROR_MAIL_STATE] = "UPDATE thread_map SET state = ?2,"
				" sent = ?3, sent_by = ?4"
				" WHERE message_id = ?1",
	[S_MIRROR_REV] = "INSERT INTO revisions (" REV_COLS ")"
			 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
			 " ?11, ?12, ?13)"
			 " ON CONFLICT DO NOTHING",
	[S_MIRROR_REV_STATE] = "UPDATE revisions SET patches = ?4,"
			       " cover_msgid = ?5, state = ?6, sent = ?7"
			       " WHERE project = ?1 AND iid = ?2"
			       " AND revision = ?3",
	[S_MAIL_BY_NOTE] = "SELECT " MAIL_READ_COLS " FROM thread_map"
			   " WHERE project = ?1 AND note_id = ?2"
			   " ORDER BY created, rowid LIMIT 1",
	/* When the MTA last took a mail of the bridge's (health.h). */
	[S_MAIL_LAST_SENT] = "SELECT COALESCE(MAX(sent), 0) FROM thread_map"
			     " WHERE state = 'sent'",

	/* Nothing when the head (or, racing, the number) is taken. */
	[S_REV_START] =
		"INSERT INTO revisions (project, iid, revision, head_sha,"
		" base_sha, start_sha, version_id, patch_id, patches,"
		" cover_msgid, state, created)"
		" SELECT ?1, ?2, COALESCE(MAX(revision), 0) + 1, ?3, ?4, ?5,"
		" ?6, ?7, ?8, ?9, 'sending', ?10"
		" FROM revisions WHERE project = ?1 AND iid = ?2"
		" ON CONFLICT DO NOTHING RETURNING revision",
	[S_REV_MARK_SENT] = "UPDATE revisions SET state = 'sent',"
			    " sent = COALESCE(sent, ?4)"
			    " WHERE project = ?1 AND iid = ?2"
			    " AND revision = ?3",
	[S_REV_GET] = "SELECT " REV_COLS " FROM revisions"
		      " WHERE project = ?1 AND iid = ?2 AND revision = ?3",
	[S_REV_LATEST] = "SELECT " REV_COLS " FROM revisions"
			 " WHERE project = ?1 AND iid = ?2"
			 " ORDER BY revision DESC LIMIT 1",
	/* A head may be on several bases (retargets): the newest. */
	[S_REV_BY_HEAD] = "SELECT " REV_COLS " FROM revisions"
			  " WHERE project = ?1 AND iid = ?2 AND head_sha = ?3"
			  " ORDER BY revision DESC LIMIT 1",
	[S_REV_BY_BASE] = "SELECT " REV_COLS " FROM revisions"
			  " WHERE project = ?1 AND iid = ?2 AND head_sha = ?3"
			  " AND (base_sha = ?4 OR (base_sha IS NULL"
			  " AND ?4 IS NULL))"
			  " ORDER BY revision DESC LIMIT 1",

	[S_IN_RECORD] = "INSERT INTO inbound (" IN_COLS ", record)"
			" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'received', 0,"
			" ?8, NULL, ?9, ?9, ?10, NULL, 0, ?11)"
			" ON CONFLICT (message_id) DO NOTHING",
	[S_IN_CLAIM] = IN_CLAIM_SET
	" WHERE message_id = (SELECT message_id FROM inbound"
	"  WHERE " IN_DUE IN_CLAIM_ORDER ") AND " IN_DUE " RETURNING " IN_COLS,
	/* Only the claimer (or, from before claims had owners, anyone)
	 * finishes; a finished mail's spool record is not kept. */
	[S_IN_FINISH] = "UPDATE inbound SET state = ?2,"
			" next_attempt = COALESCE(?3, next_attempt),"
			" last_error = ?4, updated = ?5, lease_until = 0,"
			" record = CASE WHEN ?2 = 'failed' THEN record END"
			" WHERE message_id = ?1 AND state = 'applying'"
			" AND (claimed_by IS NULL OR claimed_by = ?6)",
	/* A retry that is not an attempt: the claim's count taken back. */
	[S_IN_WAIT] = "UPDATE inbound SET state = 'failed',"
		      " attempts = CASE WHEN attempts > 0 THEN attempts - 1"
		      " ELSE 0 END,"
		      " next_attempt = ?2, last_error = ?3, updated = ?4,"
		      " lease_until = 0"
		      " WHERE message_id = ?1 AND state = 'applying'"
		      " AND (claimed_by IS NULL OR claimed_by = ?5)",
	/* Where a claimed mail was applied, when that is not where the
	 * milter placed it (inbound.c, the headers disagree). */
	[S_IN_PLACE] = "UPDATE inbound SET project = ?2, iid = ?3,"
		       " revision = ?4, patch = ?5"
		       " WHERE message_id = ?1 AND state = 'applying'",
	[S_IN_RENEW] = "UPDATE inbound SET lease_until = ?3"
		       " WHERE message_id = ?1 AND state = 'applying'"
		       " AND claimed_by = ?2",
	[S_IN_HOLDER] = "SELECT claimed_by, lease_until FROM inbound"
			" WHERE message_id = ?1 AND state = 'applying'",
	[S_IN_RECOVER] = "UPDATE inbound SET state = 'received', updated = ?1,"
			 " lease_until = 0"
			 " WHERE state = 'applying'"
			 " AND (claimed_by IS NULL OR claimed_by = ?2)",
	[S_IN_LIST] = "SELECT " IN_COLS " FROM inbound WHERE state = ?1"
		      " ORDER BY created, rowid LIMIT ?2",
	[S_IN_GET] = "SELECT " IN_COLS " FROM inbound WHERE message_id = ?1",
	/* One pass over the table, whatever its size. */
	[S_IN_COUNT] = "SELECT project, state, COUNT(*) FROM inbound"
		       " GROUP BY project, state"
		       " ORDER BY project NULLS FIRST, state LIMIT ?1",
	[S_IN_SPOOL_RECORD] = "SELECT record FROM inbound"
			      " WHERE message_id = ?1",

	[S_ACT_INSERT] = "INSERT INTO forge_actions (" ACT_COLS ")"
			 " VALUES (?1, ?2, ?3, ?4, 'intent', NULL, NULL, 1,"
			 " NULL, ?5, ?5, ?6)"
			 " ON CONFLICT (message_id, action_index) DO NOTHING",
	[S_ACT_AGAIN] = "UPDATE forge_actions SET state = 'intent',"
			" attempts = attempts + 1, updated = ?3, host = ?4"
			" WHERE message_id = ?1 AND action_index = ?2"
			" AND state != 'done'",
	[S_ACT_GET] = "SELECT " ACT_COLS " FROM forge_actions"
		      " WHERE message_id = ?1 AND action_index = ?2",
	[S_ACT_COMPLETE] = "UPDATE forge_actions SET state = 'done',"
			   " note_id = ?3, discussion_id = ?4,"
			   " last_error = NULL, updated = ?5"
			   " WHERE message_id = ?1 AND action_index = ?2",
	[S_ACT_FAIL] = "UPDATE forge_actions SET state = 'failed',"
		       " last_error = ?3, updated = ?4"
		       " WHERE message_id = ?1 AND action_index = ?2"
		       " AND state != 'done'",
	[S_ACT_LIST] = "SELECT " ACT_COLS " FROM forge_actions"
		       " WHERE message_id = ?1 ORDER BY action_index",
	/* Among the MR's mails (the archive's index), not the whole table. */
	[S_ACT_BY_DISCUSSION] = "SELECT " ACT_COLS " FROM forge_actions"
				" WHERE discussion_id = ?3 AND state = 'done'"
				" AND message_id IN (SELECT message_id"
				" FROM archive WHERE project = ?1"
				" AND iid = ?2)"
				" ORDER BY created, action_index LIMIT 1",
	[S_VERDICT_CLEAR] =
		"DELETE FROM trailer_verdicts WHERE message_id = ?1",
	[S_VERDICT_PUT] = "INSERT INTO trailer_verdicts"
			  " (message_id, trailer_index, verdict)"
			  " VALUES (?1, ?2, ?3)",
	[S_VERDICT_LIST] = "SELECT verdict FROM trailer_verdicts"
			   " WHERE message_id = ?1 ORDER BY trailer_index",

	/* Notices to senders and their opt-outs (store_notice.h). */
	[S_NOTICE_PUT] = "INSERT INTO notices (" NOTICE_COLS ")"
			 " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
			 " ON CONFLICT (message_id) DO NOTHING",
	[S_NOTICE_GET] = "SELECT " NOTICE_COLS " FROM notices"
			 " WHERE message_id = ?1",
	[S_NOTICE_COUNT] = "SELECT count(*) FROM notices"
			   " WHERE recipient = ?1 AND created >= ?2"
			   " AND decision = 'sent'",
	[S_OPTOUT_PUT] = "INSERT INTO notice_optouts (address, created)"
			 " VALUES (?1, ?2) ON CONFLICT (address) DO NOTHING",
	[S_OPTOUT_DELETE] = "DELETE FROM notice_optouts WHERE address = ?1",
	[S_OPTOUT_GET] = "SELECT 1 FROM notice_optouts WHERE address = ?1",

	[S_CURSOR_GET] = "SELECT value FROM cursors WHERE name = ?1",
	[S_CURSOR_SET] = "INSERT INTO cursors (name, value, updated)"
			 " VALUES (?1, ?2, ?3) ON CONFLICT (name)"
			 " DO UPDATE SET value = excluded.value,"
			 " updated = excluded.updated",
	/* A project's state under another name (store_project_rename()):
	 * the revisions are copied first and dropped last, as the thread
	 * map's rows refer to them. */
	[S_RENAME_HAS] =
		"SELECT (SELECT COUNT(*) FROM revisions"
		" WHERE project = ?1)"
		" + (SELECT COUNT(*) FROM thread_map WHERE project = ?1)"
		" + (SELECT COUNT(*) FROM inbound WHERE project = ?1)"
		" + (SELECT COUNT(*) FROM archive WHERE project = ?1)"
		" + (SELECT COUNT(*) FROM submissions WHERE project = ?1)"
		" + (SELECT COUNT(*) FROM cursors WHERE name = ?2)",
	[S_RENAME_REV_COPY] = "INSERT INTO revisions (" REV_COLS ")"
			      " SELECT ?2, iid, revision, head_sha, base_sha,"
			      " start_sha, version_id, patch_id, patches,"
			      " cover_msgid, state, created, sent"
			      " FROM revisions WHERE project = ?1",
	[S_RENAME_MAIL] = "UPDATE thread_map SET project = ?2"
			  " WHERE project = ?1",
	[S_RENAME_REV_DROP] = "DELETE FROM revisions WHERE project = ?1",
	[S_RENAME_INBOUND] = "UPDATE inbound SET project = ?2"
			     " WHERE project = ?1",
	[S_RENAME_ARCHIVE] = "UPDATE archive SET project = ?2"
			     " WHERE project = ?1",
	[S_RENAME_SUBMISSIONS] = "UPDATE submissions SET project = ?2"
				 " WHERE project = ?1",
	[S_RENAME_CURSORS] = "SELECT name FROM cursors ORDER BY name",
	[S_RENAME_CURSOR_DROP] = "DELETE FROM cursors WHERE name = ?1",
	[S_RENAME_CURSOR] = "UPDATE cursors SET name = ?2 WHERE name = ?1",
	[S_CURSOR_BY_VALUE] = "SELECT name FROM cursors WHERE value = ?1"
			      " ORDER BY name",

	[S_REV_LIST] = "SELECT " REV_COLS " FROM revisions WHERE project = ?1"
		       " ORDER BY iid, revision LIMIT ?2",
	[S_REV_LIST_ALL] = "SELECT " REV_COLS " FROM revisions"
			   " ORDER BY project, iid, revision LIMIT ?1",
	/* Each MR's latest revision, when it was started since ?2. */
	[S_REV_RECENT] = "SELECT " REV_COLS " FROM revisions r"
			 " WHERE project = ?1 AND created >= ?2"
			 " AND revision = (SELECT MAX(revision) FROM revisions"
			 " WHERE project = r.project AND iid = r.iid)"
			 " ORDER BY iid LIMIT ?3",

	/* Only for a thread-map row that exists (and is ours to send). */
	[S_OUT_PUT] = "INSERT INTO outmail (message_id, envelope_from,"
		      " recipients, message, state, attempts, next_attempt,"
		      " last_error, created, updated)"
		      " SELECT ?1, ?2, ?3, ?4, 'queued', 0, 0, NULL, ?5, ?5"
		      " FROM thread_map WHERE message_id = ?1"
		      " ON CONFLICT (message_id) DO NOTHING",
	[S_OUT_EXISTS] = "SELECT (SELECT COUNT(*) FROM outmail"
			 " WHERE message_id = ?1),"
			 " (SELECT COUNT(*) FROM thread_map"
			 " WHERE message_id = ?1)",
	[S_OUT_GET] = OUT_SELECT " WHERE o.message_id = ?1",
	[S_OUT_LIST] = OUT_SELECT_NO_MESSAGE
	" WHERE (?1 IS NULL OR t.project = ?1)"
	" AND (?2 = 0 OR t.iid = ?2)"
	" ORDER BY t.project, t.iid, t.revision, t.patch,"
	" o.created LIMIT ?3",
	/* Free (never claimed, released, or the claim expired) or ours. */
	[S_OUT_CLAIM] = "UPDATE outmail SET claimed_by = ?2,"
			" lease_until = ?3"
			" WHERE message_id = ?1"
			" AND (lease_until <= ?4 OR claimed_by = ?2)",
	[S_OUT_HOLDER] = "SELECT claimed_by, lease_until FROM outmail"
			 " WHERE message_id = ?1",
	/* Only under this host's claim. */
	[S_OUT_HAND] = "UPDATE outmail SET handed = ?2, updated = ?2"
		       " WHERE message_id = ?1 AND claimed_by = ?3"
		       " AND lease_until != 0",
	/* Wait, defer and fail release the claim, unless another host
	 * holds a claim that has not expired; defer and fail know the
	 * MTA's answer, wait does not. */
	[S_OUT_WAIT] = "UPDATE outmail SET state = 'deferred',"
		       " attempts = attempts + ?6, next_attempt = ?2,"
		       " last_error = ?3, updated = ?4, lease_until = 0"
		       " WHERE message_id = ?1 AND handed != 0"
		       " AND (lease_until <= ?4"
		       " OR claimed_by IS NULL OR claimed_by = ?5)",
	[S_OUT_DEFER] = "UPDATE outmail SET state = 'deferred',"
			" attempts = attempts + 1, next_attempt = ?2,"
			" last_error = ?3, updated = ?4, lease_until = 0,"
			" handed = 0"
			" WHERE message_id = ?1 AND (lease_until <= ?4"
			" OR claimed_by IS NULL OR claimed_by = ?5)",
	[S_OUT_FAIL] = "UPDATE outmail SET state = 'failed',"
		       " attempts = attempts + 1, last_error = ?2,"
		       " updated = ?3, lease_until = 0, handed = 0"
		       " WHERE message_id = ?1 AND (lease_until <= ?3"
		       " OR claimed_by IS NULL OR claimed_by = ?4)",
	[S_OUT_REQUEUE] = "UPDATE outmail SET state = 'queued',"
			  " next_attempt = 0, updated = ?3"
			  " WHERE state = 'failed' AND message_id IN"
			  " (SELECT message_id FROM thread_map"
			  "  WHERE project = ?1 AND iid = ?2)",
	[S_OUT_DELETE] = "DELETE FROM outmail WHERE message_id = ?1",
	/* Mails of the same revision still queued. */
	[S_OUT_LEFT] = "SELECT COUNT(*) FROM outmail o"
		       " JOIN thread_map t ON t.message_id = o.message_id"
		       " WHERE (t.project, t.iid, t.revision) ="
		       " (SELECT project, iid, revision FROM thread_map"
		       "  WHERE message_id = ?1)",
	[S_OUT_REV_SENT] = "UPDATE revisions SET state = 'sent', sent = ?2"
			   " WHERE state = 'sending'"
			   " AND (project, iid, revision) ="
			   " (SELECT project, iid, revision FROM thread_map"
			   "  WHERE message_id = ?1)",

	/* A notice to a sender (kind receipt) went to the sender alone:
	 * not the list's, so not archived for export. */
	[S_ARCH_FROM_OUT] = "INSERT INTO archive (message_id,"
			    " project, iid, origin, message, created)"
			    " SELECT o.message_id, t.project, t.iid, 'bridge',"
			    " o.message, ?2 FROM outmail o"
			    " JOIN thread_map t ON t.message_id = o.message_id"
			    " WHERE o.message_id = ?1"
			    " AND t.kind <> 'receipt'"
			    " ON CONFLICT (message_id) DO NOTHING",
	[S_ARCH_PUT] = "INSERT INTO archive (message_id, project,"
		       " iid, origin, message, created)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
		       " ON CONFLICT (message_id) DO NOTHING",
	[S_ARCH_GET] = "SELECT message_id, project, iid, origin, message,"
		       " created FROM archive WHERE message_id = ?1",
	[S_ARCH_LIST] = "SELECT message_id, project, iid, origin, NULL,"
			" created FROM archive WHERE project = ?1 AND iid = ?2"
			" ORDER BY created, rowid LIMIT ?3",
	[S_ARCH_MISSING] = "SELECT (SELECT COUNT(*) FROM thread_map t"
			   " WHERE t.project = ?1 AND t.iid = ?2"
			   " AND t.state = 'sent' AND NOT EXISTS"
			   " (SELECT 1 FROM archive a"
			   "  WHERE a.message_id = t.message_id))"
			   " + (SELECT COUNT(*) FROM inbound i"
			   " WHERE i.project = ?1 AND i.iid = ?2 AND NOT EXISTS"
			   " (SELECT 1 FROM archive a"
			   "  WHERE a.message_id = i.message_id))",
	[S_ARCH_PRUNE] = "DELETE FROM archive WHERE created < ?1",

	[S_SUB_PUT] = "INSERT INTO submissions (series_id, sender, project,"
		      " version, total, state, iid, created, updated)"
		      " VALUES (?1, ?2, ?3, ?4, ?5, 'collecting', NULL, ?6, ?6)"
		      " ON CONFLICT (series_id) DO NOTHING",
	[S_SUB_GET] = "SELECT " SUB_COLS " FROM submissions"
		      " WHERE series_id = ?1",
	/* Whole: patches 1 to N, and the cover letter unless the series
	 * is keyed by patch 1 (it has none). */
	[S_SUB_WHOLE] = "UPDATE submissions SET state = 'whole', updated = ?2"
			" WHERE series_id = ?1 AND state = 'collecting'"
			" AND (SELECT COUNT(*) FROM submission_mails m"
			"  WHERE m.series_id = ?1 AND m.patch >= 1) = total"
			" AND EXISTS (SELECT 1 FROM submission_mails m"
			"  WHERE m.series_id = ?1 AND (m.patch = 0"
			"  OR (m.patch = 1 AND m.message_id = ?1)))",
	[S_SUB_LIST_WHOLE] = "SELECT " SUB_COLS " FROM submissions"
			     " WHERE state = 'whole'"
			     " ORDER BY updated, series_id LIMIT ?1",
	[S_SUB_FINISH] = "UPDATE submissions SET state = ?2, iid = ?3,"
			 " updated = ?4"
			 " WHERE series_id = ?1 AND state = 'whole'",
	[S_SUB_LIST_OPENED] = "SELECT " SUB_COLS " FROM submissions"
			      " WHERE project = ?1 AND sender = ?2"
			      " AND state = 'opened'"
			      " ORDER BY updated DESC, series_id LIMIT ?3",
	[S_SUBM_PUT] = "INSERT INTO submission_mails (message_id, series_id,"
		       " patch, message, created)"
		       " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
	[S_SUBM_GET] = "SELECT message_id, series_id, patch, NULL, created"
		       " FROM submission_mails WHERE message_id = ?1",
	[S_SUBM_LIST] = "SELECT " SUBM_COLS " FROM submission_mails"
			" WHERE series_id = ?1 ORDER BY patch",
	[S_SUB_BYTES] = "SELECT COALESCE(SUM(LENGTH(message)), 0)"
			" FROM submission_mails WHERE series_id = ?1",
	[S_SUB_COUNT_SENDER] = "SELECT COUNT(*) FROM submissions"
			       " WHERE sender = ?1 AND created >= ?2",
	/* Collecting since before ?1, and its sender told nothing yet:
	 * neither a reminder (key ?2 || id) nor a refusal (?3 || id). */
	[S_SUB_LIST_DUE] = SUB_LIST_DUE("?2", "?3"),
	[S_SUBM_FIRST] = "SELECT " SUBM_COLS " FROM submission_mails"
			 " WHERE series_id = ?1 ORDER BY patch LIMIT 1",
};

/* Where PostgreSQL needs other words. */
static const char *const stmt_sql_pg[S_NR] = {
	[S_VERSION_TABLE] = "SELECT COUNT(*) FROM pg_catalog.pg_tables"
			    " WHERE schemaname = current_schema()"
			    " AND tablename = 'schema_version'",
	[S_USER_VERSION] = "SELECT COALESCE(MAX(version), 0)"
			   " FROM schema_version",
	[S_IN_CLAIM] = IN_CLAIM_PG,
	/* a parameter's type is not inferred from || */
	[S_SUB_LIST_DUE] =
		SUB_LIST_DUE("CAST(?2 AS BYTEA)", "CAST(?3 AS BYTEA)"),
};

/* Name -> enum through a table; -1 when unknown. */
int name_index(const char *const *names, size_t nr, const char *s, size_t len)
{
	size_t i;

	if (!s)
		return -1;
	for (i = 0; i < nr; i++)
		if (names[i] && strlen(names[i]) == len &&
		    !memcmp(names[i], s, len))
			return (int)i;
	return -1;
}

/* Prefix the driver's message with the database and what was done. */
int db_fail(struct store *st, int rc, const char *what)
{
	return err_prefix(rc, "state db %s: %s", st->name, what);
}

int check_str(const char *what, const char *s, size_t max, int required)
{
	if (!s || !*s) {
		if (required)
			return err_set(PB_EINVAL, "state db: %s is missing",
				       what);
		return 0;
	}
	if (strnlen(s, max + 1) > max)
		return err_set(PB_EINVAL,
			       "state db: %s is too long (over %zu bytes)",
			       what, max);
	return 0;
}

/* An object id: hex, at most STORE_SHA_MAX digits. */
int check_sha(const char *what, const char *s, int required)
{
	const char *p;
	int rc = check_str(what, s, STORE_SHA_MAX, required);

	if (rc || !s)
		return rc;
	for (p = s; *p; p++)
		if (!strchr("0123456789abcdefABCDEF", *p))
			return err_set(PB_EINVAL,
				       "state db: %s is not a hex object id",
				       what);
	return 0;
}

/* A short lowercase name: kinds and classifications. */
int check_token(const char *what, const char *s)
{
	const char *p;
	int rc = check_str(what, s, STORE_TOKEN_MAX, 1);

	if (rc)
		return rc;
	for (p = s; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789-_", *p))
			return err_set(PB_EINVAL,
				       "state db: %s is not a lowercase token",
				       what);
	return 0;
}

int check_mr(const char *project, int64_t iid)
{
	int rc = check_str("project", project, STORE_PROJECT_MAX, 1);

	if (rc)
		return rc;
	if (iid <= 0)
		return err_set(PB_EINVAL, "state db: bad MR iid %lld",
			       (long long)iid);
	return 0;
}

/*
 * Queries.  A query borrows a cached prepared statement; q_end() resets
 * it for the next user.  Binding failures are reported by the first
 * q_step(), so callers bind without checking each call.  q_exec() keeps
 * the number of rows the statement changed in q->changes.
 */

const char *stmt_text(const struct store *st, enum stmt_id id)
{
	const char *sql = st->backend == STORE_BACKEND_POSTGRESQL &&
					  stmt_sql_pg[id] ?
				  stmt_sql_pg[id] :
				  stmt_sql[id];

	if (!sql)
		BUG("statement %d has no text for this engine", (int)id);
	return sql;
}

int q_start(struct query *q, struct store *st, enum stmt_id id,
	    const char *what)
{
	int rc;

	q->st = st;
	q->stmt = NULL;
	q->what = what;
	q->changes = 0;
	if (!st->stmts[id]) {
		rc = db_prepare(&st->stmts[id], st->db, stmt_text(st, id));
		if (rc) {
			st->stmts[id] = NULL;
			return db_fail(st, rc, what);
		}
	}
	q->stmt = st->stmts[id];
	return 0;
}

int q_start_msgid(struct query *q, struct store *st, enum stmt_id id,
		  const char *what, const char *message_id)
{
	int rc = check_str("Message-ID", message_id, STORE_MSGID_MAX, 1);

	if (!rc)
		rc = q_start(q, st, id, what);
	if (!rc)
		q_text(q, 1, message_id);
	return rc;
}

int q_start_mr(struct query *q, struct store *st, enum stmt_id id,
	       const char *what, const char *project, int64_t iid)
{
	int rc = check_mr(project, iid);

	if (!rc)
		rc = q_start(q, st, id, what);
	if (!rc) {
		q_text(q, 1, project);
		q_int(q, 2, iid);
	}
	return rc;
}

/* NULL binds SQL NULL. */
void q_text(struct query *q, int i, const char *s)
{
	db_bind_text(q->st->db, q->stmt, i, s, s ? strlen(s) : 0);
}

/* An optional text: NULL and "" bind SQL NULL. */
void q_opt(struct query *q, int i, const char *s)
{
	q_text(q, i, s && *s ? s : NULL);
}

/* A text that may be empty; NULL binds SQL NULL. */
void q_textn(struct query *q, int i, const char *s, size_t len)
{
	db_bind_text(q->st->db, q->stmt, i, s, len);
}

void q_blob(struct query *q, int i, const void *p, size_t len)
{
	db_bind_blob(q->st->db, q->stmt, i, p, len);
}

/*
 * An error or reason text: cut to STORE_ERROR_MAX bytes (at a UTF-8
 * character boundary) rather than refused; NULL and "" bind NULL.
 */
void q_error(struct query *q, int i, const char *s)
{
	size_t n;

	if (!s || !*s) {
		q_text(q, i, NULL);
		return;
	}
	n = strnlen(s, STORE_ERROR_MAX + 1);
	if (n > STORE_ERROR_MAX) {
		n = STORE_ERROR_MAX;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	q_textn(q, i, s, n);
}

void q_int(struct query *q, int i, int64_t v)
{
	db_bind_int(q->st->db, q->stmt, i, v);
}

/* 0 stands for "none": bind SQL NULL. */
void q_int_or_null(struct query *q, int i, int64_t v)
{
	if (v)
		q_int(q, i, v);
	else
		db_bind_int_null(q->st->db, q->stmt, i);
}

/* 1 for a row, 0 when done, or a negative error code. */
int q_step(struct query *q)
{
	int rc = db_step(q->st->db, q->stmt);

	if (rc == 0)
		q->changes = db_changes(q->st->db, q->stmt);
	if (rc < 0)
		return db_fail(q->st, rc, q->what);
	return rc;
}

/* Run to completion; for statements that return no rows we need. */
int q_exec(struct query *q)
{
	int rc;

	while ((rc = q_step(q)) == 1)
		;
	return rc;
}

void q_end(struct query *q)
{
	if (!q->stmt)
		return;
	db_reset(q->st->db, q->stmt);
	q->stmt = NULL;
}

int q_scalar(struct query *q, int64_t *out)
{
	int rc = q_step(q);

	if (rc == 1) {
		*out = col_int(q, 0);
		rc = 0;
	}
	q_end(q);
	return rc;
}

char *col_str(struct query *q, int i)
{
	size_t len;
	const char *p = db_column_bytes(q->st->db, q->stmt, i, &len);

	return p ? xstrndup(p, len) : NULL;
}

/* A column's bytes, copied and NUL-terminated; NULL for SQL NULL. */
char *col_blob(struct query *q, int i, size_t *len)
{
	const char *p = db_column_bytes(q->st->db, q->stmt, i, len);
	char *copy;

	if (!p)
		return NULL;
	copy = xmalloc(*len + 1);
	if (*len)
		memcpy(copy, p, *len);
	copy[*len] = '\0';
	return copy;
}

/*
 * A column's text (or bytes) as a string the record owns: kept in
 * owned, released with the record.  NULL for SQL NULL.
 */
const char *col_own(struct strlist *owned, struct query *q, int i)
{
	char *t = col_str(q, i);

	if (t)
		strlist_push_owned(owned, t);
	return t;
}

const char *col_own_blob(struct strlist *owned, struct query *q, int i,
			 size_t *len)
{
	char *t = col_blob(q, i, len);

	if (t)
		strlist_push_owned(owned, t);
	return t;
}

int64_t col_int(struct query *q, int i)
{
	return db_column_int(q->st->db, q->stmt, i);
}

int col_enum(struct query *q, int i, const char *const *names, size_t nr)
{
	char qb[PB_LOG_QUOTE_MAX];
	size_t len;
	const char *p = db_column_bytes(q->st->db, q->stmt, i, &len);
	int v = name_index(names, nr, p, len);

	if (v < 0)
		return err_set(PB_ERROR, "state db %s: %s: unknown value '%s'",
			       q->st->name, q->what,
			       printable_copy(qb, sizeof(qb), p ? p : "", len));
	return v;
}

/*
 * Who holds the claim of a row (stmt selects claimed_by and lease_until
 * by Message-ID): 0 when nobody else does - no claim, this host's, or
 * (live) one that expired; PB_EEXISTS naming the host when another host
 * does; *found 0 when there is no such row.  what names the row.
 */
int claim_holder(int *found, struct store *st, enum stmt_id stmt,
		 const char *message_id, const char *what, int live)
{
	char qb[PB_LOG_QUOTE_MAX], hb[PB_LOG_QUOTE_MAX];
	struct query q;
	char *holder = NULL;
	int64_t until = 0;
	int rc;

	*found = 0;
	rc = q_start(&q, st, stmt, "look up a claim");
	if (rc)
		return rc;
	q_text(&q, 1, message_id);
	rc = q_step(&q);
	if (rc == 1) {
		*found = 1;
		holder = col_str(&q, 0);
		until = col_int(&q, 1);
		rc = 0;
	}
	q_end(&q);
	if (!rc && holder && strcmp(holder, st->host) &&
	    (!live || until > now()))
		rc = err_set(PB_EEXISTS,
			     "state db: %s <%s> is claimed by host %s (until "
			     "%lld)",
			     what, quote(qb, sizeof(qb), message_id),
			     quote(hb, sizeof(hb), holder), (long long)until);
	free(holder);
	return rc;
}

/* ---- the row binding ---------------------------------------------------- */

void row_init(const struct row_type *t, void *row)
{
	memset(row, 0, t->size);
}

void row_release(const struct row_type *t, void *row)
{
	strlist_release((struct strlist *)((char *)row + t->owned));
	row_init(t, row);
}

void row_array_release(const struct row_type *t, void *items, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		row_release(t, (char *)items + i * t->size);
	free(items);
}

/* An integer (an enum is one) into a field of its size. */
static void put_int(const struct row_type *t, void *field, size_t size,
		    int64_t v)
{
	int i = (int)v;

	if (size == sizeof(int64_t))
		memcpy(field, &v, sizeof(v));
	else if (size == sizeof(int))
		memcpy(field, &i, sizeof(i));
	else
		BUG("%s: a field of %zu bytes", t->name, size);
}

int row_read(const struct row_type *t, void *row, struct query *q)
{
	struct strlist *owned = (struct strlist *)((char *)row + t->owned);
	int vals[32];
	size_t i, len;
	char *field;

	if (t->nr > ARRAY_SIZE(vals))
		BUG("%s: %zu columns", t->name, t->nr);
	for (i = 0; i < t->nr; i++) {
		const struct col *c = &t->cols[i];

		if (c->kind == COL_NONE)
			BUG("%s: column %zu is not described", t->name, i);
		vals[i] = 0;
		if (c->kind == COL_K_ENUM_NULL &&
		    db_column_null(q->st->db, q->stmt, (int)i))
			continue;
		if (c->kind == COL_K_ENUM || c->kind == COL_K_ENUM_NULL) {
			vals[i] = col_enum(q, (int)i, c->names, c->nr);
			if (vals[i] < 0)
				return vals[i];
		}
	}
	row_release(t, row);
	for (i = 0; i < t->nr; i++) {
		const struct col *c = &t->cols[i];
		const char *s;

		field = (char *)row + c->off;
		switch (c->kind) {
		case COL_K_TEXT:
			s = col_own(owned, q, (int)i);
			memcpy(field, &s, sizeof(s));
			break;
		case COL_K_BLOB:
			s = col_own_blob(owned, q, (int)i, &len);
			memcpy(field, &s, sizeof(s));
			memcpy((char *)row + c->len_off, &len, sizeof(len));
			break;
		case COL_K_INT:
			put_int(t, field, c->size, col_int(q, (int)i));
			break;
		case COL_K_ENUM:
		case COL_K_ENUM_NULL:
			put_int(t, field, c->size, vals[i]);
			break;
		case COL_NONE:
			break;
		}
	}
	return 0;
}

int row_get(const struct row_type *t, void *row, struct query *q)
{
	int rc = q_step(q);

	if (rc == 1) {
		rc = row_read(t, row, q);
		if (!rc)
			rc = 1;
	}
	q_end(q);
	return rc;
}
