/*
 * help - the usage texts of the commands that run in the programs under
 * libexec (format, send, run, status, why, replay, export).
 *
 * They live apart from the commands' code so that the `patchbridge`
 * front (main.c) can list them and print "COMMAND --help" without linking
 * that code, and so without loading libgit2, libcurl, SQLite and their
 * TLS libraries for a help text (see "Programs" in main.c).  Each text is
 * declared in its command's header.
 */
#include "cmd/cmd_daemon.h"
#include "cmd/cmd_export.h"
#include "cmd/cmd_attest.h"
#include "cmd/cmd_format.h"
#include "cmd/cmd_replay.h"
#include "cmd/cmd_why.h"

/* patchbridge format */
const char cmd_format_synopsis[] = "[OPTION...]";
const char cmd_format_summary[] =
	"a commit range as the series mbox the list would get";
const char cmd_format_help[] =
	"Prints the series of the commits base..head (merges left out) as an\n"
	"mbox, rendered exactly as the daemon mails it: cover letter, one\n"
	"mail per commit; git am and b4 am apply it.  Offline: no forge, no\n"
	"SMTP, no state.  The same input gives the same bytes.\n"
	"--repo, --base and --head are required.\n"
	"\n"
	"  --repo DIR            git repository (bare or work tree)\n"
	"  --base REV            the target the series applies to\n"
	"  --head REV            the last commit of the series\n"
	"  --version N           revision number (default 1: \"[PATCH 1/3]\")\n"
	"  --mr-json FILE        GitLab MR JSON (GET .../merge_requests/:iid)\n"
	"                        for title, description, author, URL, project\n"
	"  --range-diff A..B     the previous revision's range, for the cover\n"
	"                        letter's \"Changes in vN\"\n"
	"  --prev-version N      that revision's number (default: version - 1)\n"
	"  --in-reply-to MSGID   make the first mail a reply to MSGID\n"
	"  --to ADDR, --cc ADDR  recipients (repeatable; duplicates dropped)\n"
	"  --project PATH        project path without --mr-json\n"
	"  --iid N               MR number without --mr-json (default 1)\n"
	"  --bridge-name NAME    From: \"Author via NAME\" (default patchbridge)\n"
	"  --bridge-address ADDR the From address (default\n"
	"                        patchbridge@patchbridge.invalid)\n"
	"  --from-author         From: the commit author's own address\n"
	"  --domain DOMAIN       Message-ID domain (default: the bridge's)\n"
	"  --cover-letter        a cover letter even for a single patch\n"
	"  --max-series N        cover letter only above N patches (100)\n"
	"  --template FILE       cover letter template (default: built in)\n"
	"  --date SECONDS        the revision date (default: head's commit\n"
	"                        date); mail k is dated SECONDS + k\n"
	"  --attest-key FILE     sign each mail as patatt does with the ed25519\n"
	"                        key in FILE (mode 0600, as [outbound]\n"
	"                        attest_key_file), for the bridge address\n"
	"  --attest-selector S   the key's selector (default: none, which\n"
	"                        readers take as \"default\")\n"
	"  -j, --jobs N          render the patches with N threads (1-8;\n"
	"                        default 2, 1 on one CPU); the output is\n"
	"                        the same\n"
	"  -o, --output FILE     write to FILE (\"-\": standard output, the\n"
	"                        default)\n";

/* patchbridge attest-key */
const char cmd_attest_key_synopsis[] =
	"[--generate] [--identity ADDR] [--selector NAME] [--public] [FILE]";
const char cmd_attest_key_summary[] =
	"make or show the key the bridge signs its series with";
const char cmd_attest_key_help[] =
	"Prints the public half of the bridge's ed25519 attestation key\n"
	"(FILE, default [outbound] attest_key_file) and what to publish so\n"
	"that b4 and patatt validate the series the bridge mails: the file\n"
	"of the project's patatt keyring, ed25519/DOMAIN/LOCAL/SELECTOR,\n"
	"holding the public key.  The key file is read under the token\n"
	"file's rules (the owner's alone, mode 0600), so run it as the\n"
	"daemon's user.\n"
	"\n"
	"  --generate       make a new key in FILE first (refused if FILE\n"
	"                   exists); the format is patatt genkey's\n"
	"  --identity ADDR  the address the key signs for (default:\n"
	"                   [bridge] address)\n"
	"  --selector NAME  the key's selector (default: [outbound]\n"
	"                   attest_selector, else \"default\")\n"
	"  --public         print the public key alone\n";

/* patchbridge send */
const char cmd_send_synopsis[] = "[OPTION] MR";
const char cmd_send_summary[] = "mail the current revision of a merge "
				"request now";
const char cmd_send_help[] =
	"MR names the merge request as GROUP/PROJECT!IID.  Looks at it as\n"
	"the daemon does and mails its current revision when that was not\n"
	"mailed before; mails an earlier revision left half sent first.\n"
	"Prints one line:\n"
	"\n"
	"  group/project!12: mailed v2 (4 mails)\n"
	"  group/project!12: already mailed as v1\n"
	"  group/project!12: not mailed: a draft (skip_drafts = yes)\n"
	"  group/project!12: v2: the MTA failed for now: 2 mails sent now,\n"
	"    2 waiting (next attempt 2026-12-03T10:01:00Z), 0 failed for good\n"
	"\n"
	"  --force   mail a draft too, and retry deferred mails now\n"
	"  --retry   queue the MR's permanently failed mails again first\n"
	"\n"
	"Exit status: 0 when there is nothing left to do (mailed, already\n"
	"mailed, or nothing to mail), 75 (EX_TEMPFAIL) when mails wait for a\n"
	"retry or the forge, git or the state database failed temporarily,\n"
	"69 (EX_UNAVAILABLE) when a mail was refused for good, 66\n"
	"(EX_NOINPUT) for an unknown merge request, 64 (EX_USAGE) for a\n"
	"project without a [project] section, 78 (EX_CONFIG) for a broken\n"
	"configuration.\n";

/* patchbridge run */
const char cmd_run_synopsis[] = "[OPTION]";
const char cmd_run_summary[] = "the daemon: poll, receive webhooks, mail "
			       "new revisions";
const char cmd_run_help[] =
	"Polls every enabled project every [outbound] poll_interval, receives\n"
	"GitLab merge request webhooks when [webhook] enabled, and mails each\n"
	"new revision of an open merge request to the list.  Mail a crash or\n"
	"the MTA left unsent goes out first.  One daemon per state database.\n"
	"\n"
	"  --once        one cycle (deliver what is due, poll, mail), then\n"
	"                exit: 0 when nothing is left to retry, 75\n"
	"                (EX_TEMPFAIL) when something is; no webhook receiver\n"
	"  --foreground  stay in the foreground and log to stderr (for\n"
	"                systemd, Type=notify); otherwise detach and log to\n"
	"                syslog, facility mail\n"
	"\n"
	"SIGTERM/SIGINT: stop after the mail being sent or the reply being\n"
	"applied (a forge that fails or hangs meanwhile is given up on within\n"
	"seconds; that reply is applied at the next start).  SIGHUP: reload\n"
	"the configuration (a broken one is refused and the old one kept).\n"
	"SIGUSR1: poll the forge and look at the spool now.  With [metrics]\n"
	"enabled: /metrics, /healthz and /readyz on [metrics] listen.\n";

/* patchbridge status */
const char cmd_status_synopsis[] = "";
const char cmd_status_summary[] = "show polls, mailed revisions and mail "
				  "waiting or failed";
const char cmd_status_help[] =
	"For every configured project: when it was last polled (and why the\n"
	"last poll failed, if it did), the merge requests and revisions\n"
	"mailed, and every mail still queued - deferred with its attempts,\n"
	"next retry and the MTA's last answer, or failed for good with the\n"
	"reason (`patchbridge send --retry PROJECT!IID` queues those again);\n"
	"the spool's depth (records in new/ and cur/ for the project); its\n"
	"inbound replies: how many were applied, ignored, are waiting,\n"
	"retrying or dead, and the first 20 waiting, retrying after a\n"
	"forge failure (attempts, next attempt, last error) or dead (the\n"
	"reason; its spool record is in the spool's dead/), with how many\n"
	"more there are.  Mail of projects no longer configured is listed\n"
	"too.  Then the spool as a whole (each area's records, the records\n"
	"in new/ and cur/ that cannot be read or are corrupt, and the dead\n"
	"letters the daemon could not even read, with their reasons) and\n"
	"the inbound totals, with the replies no configured project\n"
	"claims.  Forge comments kept on the forge as internal are counted\n"
	"per project, and a forge problem only an operator can fix (a token\n"
	"that cannot act as the reviewers) is shown first.\n"
	"`patchbridge why MESSAGE-ID` tells the whole story of one mail.\n"
	"Reads the state database (in one snapshot) and the spool only;\n"
	"safe next to a running daemon.\n";

/* patchbridge why */
const char cmd_why_synopsis[] = "[--json] MESSAGE-ID";
const char cmd_why_summary[] = "tell what the bridge did with one mail";
const char cmd_why_help[] =
	"Tells, in plain words, what became of the mail with MESSAGE-ID\n"
	"(with or without the <>): what it was classified as (a reply to\n"
	"which PROJECT!IID, revision and patch), its state in the inbound\n"
	"journal (waiting, applied, ignored and why, retrying after a forge\n"
	"failure with its attempts and next attempt, or dead and why), each\n"
	"action taken on the forge with a link to its note, which of its\n"
	"trailers became approvals, and where its spool record is (new/,\n"
	"cur/, done/ or dead/, with a dead letter's reason).  For a mail the\n"
	"bridge sent itself (cover letter, patch, forge comment, receipt) it\n"
	"says so, and whether it was sent, is queued or failed.\n"
	"Reads the state database and the spool only; safe next to a\n"
	"running daemon, and needs no forge token.\n"
	"\n"
	"  --json   the same facts as one JSON object (stable keys)\n"
	"\n"
	"Exit status: 0 when the bridge has a record of the mail, 66\n"
	"(EX_NOINPUT) when it has none: the milter passes mail that is not\n"
	"a reply to a bridged thread without spooling it, or the mail has\n"
	"not arrived; 77 (EX_NOPERM) when it cannot tell, because the\n"
	"journal has no row and a spool record that may be the mail's\n"
	"cannot be read (run it as the daemon's user).\n";

/* patchbridge replay */
const char cmd_replay_synopsis[] = "[OPTION] FILE";
const char cmd_replay_summary[] = "feed mail through the inbound pipeline "
				  "as the milter would";
const char cmd_replay_help[] =
	"Classifies each FILE.eml against the thread map exactly as\n"
	"patchbridge-milter does and spools the replies to bridged series;\n"
	"the running daemon applies them to the forge (comments, diff\n"
	"notes, approvals, NAKs).  Other mail is reported and skipped.  A\n"
	"mail already applied is not applied again (its Message-ID is in\n"
	"the journal).\n"
	"\n"
	"  --apply-now   then drain the spool and apply what is due now,\n"
	"                unless another process (the daemon) is applying;\n"
	"                without files, only that\n"
	"  --retry-now   with --apply-now: also retry mail waiting for its\n"
	"                retry after a forge outage, without waiting\n";

/* patchbridge export */
const char cmd_export_synopsis[] = "[--mbox FILE] [--public-inbox DIR] MR";
const char cmd_export_summary[] = "an MR's whole conversation as mbox or "
				  "public-inbox";
const char cmd_export_help[] =
	"MR names the merge request as GROUP/PROJECT!IID.  Writes every mail\n"
	"of its conversation: the series of every revision (cover letters and\n"
	"patches), every list reply the milter received about it, and every\n"
	"forge comment, approval and merge notice the bridge mailed, exactly\n"
	"as sent or received, oldest first by their Date headers.  Threading\n"
	"is the mails' own (Message-ID, In-Reply-To, References).\n"
	"\n"
	"  --mbox FILE          an mboxrd file (\"-\": standard output), for\n"
	"                       mutt, or `b4 am -m -` (the series with the\n"
	"                       trailers the replies gave)\n"
	"  --public-inbox DIR   a public-inbox v2 archive: DIR/git/0.git, one\n"
	"                       commit per mail; DIR must not exist or be\n"
	"                       empty.  Then, with Debian's public-inbox:\n"
	"                         public-inbox-init -V2 NAME DIR URL ADDRESS\n"
	"                         public-inbox-index DIR\n"
	"\n"
	"At least one of the two.  Mails come from the state database's\n"
	"archive (schema 4 and later; the daemon adds the list mails still in\n"
	"its spool from before); what is older is counted on stderr as\n"
	"missing.  Reads the database only; safe next to a running daemon.\n"
	"\n"
	"Exit status: 0 when written, 66 (EX_NOINPUT) when nothing is\n"
	"archived for the MR, 73 (EX_CANTCREAT) when the output cannot be\n"
	"created (DIR not empty, FILE not writable), 64 (EX_USAGE), 78\n"
	"(EX_CONFIG) for a broken configuration, 75 (EX_TEMPFAIL) when the\n"
	"database is busy, 77 (EX_NOPERM) when it cannot be read.\n";
