-- The state database of the previous release (schema 8), with rows in
-- every table: tests/install/upgrade.sh loads it and upgrades it.
-- Made with tests/cli/state_schema (sqlite PATH 8), rows by hand, then
-- sqlite3 PATH .dump.
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE revisions ( project TEXT NOT NULL, iid INTEGER NOT NULL CHECK (iid > 0), revision INTEGER NOT NULL CHECK (revision > 0), head_sha TEXT NOT NULL, base_sha TEXT, start_sha TEXT, version_id INTEGER, patch_id TEXT, patches INTEGER NOT NULL CHECK (patches >= 0), cover_msgid TEXT, state TEXT NOT NULL CHECK (state IN ('sending', 'sent')), created INTEGER NOT NULL, sent INTEGER, PRIMARY KEY (project, iid, revision), UNIQUE (project, iid, head_sha));
INSERT INTO revisions VALUES('group/project',1,1,'1111111111111111111111111111111111111111','3333333333333333333333333333333333333333','3333333333333333333333333333333333333333',7,'p1',1,'cover-1@bridge.example.org','sent',1733220000,1733220005);
INSERT INTO revisions VALUES('group/project',1,2,'2222222222222222222222222222222222222222','3333333333333333333333333333333333333333','3333333333333333333333333333333333333333',8,'p2',1,NULL,'sending',1733306400,NULL);
CREATE TABLE thread_map ( message_id TEXT PRIMARY KEY NOT NULL, project TEXT NOT NULL, iid INTEGER NOT NULL CHECK (iid > 0), revision INTEGER CHECK (revision > 0), patch INTEGER NOT NULL CHECK (patch >= 0), total INTEGER NOT NULL CHECK (total >= 0), kind TEXT NOT NULL CHECK (kind IN  ('cover', 'patch', 'forge-comment', 'receipt')), commit_sha TEXT, base_sha TEXT, start_sha TEXT, head_sha TEXT, version_id INTEGER, diff TEXT, discussion_id TEXT, note_id INTEGER, state TEXT NOT NULL CHECK (state IN ('pending', 'sent')), created INTEGER NOT NULL, sent INTEGER, sent_by TEXT, sent_how TEXT, FOREIGN KEY (project, iid, revision)  REFERENCES revisions (project, iid, revision));
INSERT INTO thread_map VALUES('cover-1@bridge.example.org','group/project',1,1,0,1,'cover',NULL,'3333333333333333333333333333333333333333','3333333333333333333333333333333333333333','1111111111111111111111111111111111111111',7,NULL,NULL,NULL,'sent',1733220000,1733220005,'mx1','smtp');
INSERT INTO thread_map VALUES('patch-1-1@bridge.example.org','group/project',1,1,1,1,'patch','4444444444444444444444444444444444444444','3333333333333333333333333333333333333333','3333333333333333333333333333333333333333','1111111111111111111111111111111111111111',7,replace('diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n','\n',char(10)),NULL,NULL,'sent',1733220000,1733220005,'mx1','smtp');
INSERT INTO thread_map VALUES('patch-2-1@bridge.example.org','group/project',1,2,1,1,'patch','2222222222222222222222222222222222222222','3333333333333333333333333333333333333333','3333333333333333333333333333333333333333','2222222222222222222222222222222222222222',8,'diff','','','pending',1733306400,NULL,NULL,NULL);
INSERT INTO thread_map VALUES('note-5@bridge.example.org','group/project',1,1,1,1,'forge-comment',NULL,NULL,NULL,NULL,NULL,NULL,'d0c5',5,'sent',1733221000,1733221001,'mx1','smtp');
CREATE TABLE cursors ( name TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL, updated INTEGER NOT NULL);
INSERT INTO cursors VALUES('poll:group/project','2026-12-03T10:00:00Z',1733220000);
CREATE TABLE inbound ( message_id TEXT PRIMARY KEY NOT NULL, spool_name TEXT NOT NULL, project TEXT, iid INTEGER CHECK (iid > 0), revision INTEGER CHECK (revision > 0), patch INTEGER CHECK (patch >= 0), classification TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('received', 'applying',  'applied', 'ignored', 'failed', 'dead')), attempts INTEGER NOT NULL CHECK (attempts >= 0), next_attempt INTEGER NOT NULL, last_error TEXT, created INTEGER NOT NULL, updated INTEGER NOT NULL, spooled_by TEXT, claimed_by TEXT, lease_until INTEGER NOT NULL DEFAULT 0, record BLOB);
INSERT INTO inbound VALUES('reply-1@corp.example','1733221500000000.4ABC.1.0','group/project',1,1,1,'reply','applied',1,0,NULL,1733221500,1733221502,'mx1',NULL,0,NULL);
INSERT INTO inbound VALUES('reply-2@corp.example','1733221600000000.4ABD.1.0','group/project',1,1,1,'reply','dead',5,0,'forge said 400',1733221600,1733225200,'mx1',NULL,0,NULL);
CREATE TABLE forge_actions ( message_id TEXT NOT NULL, action_index INTEGER NOT NULL CHECK (action_index >= 0), kind TEXT NOT NULL, marker TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('intent', 'done', 'failed')), note_id INTEGER, discussion_id TEXT, attempts INTEGER NOT NULL CHECK (attempts >= 0), last_error TEXT, created INTEGER NOT NULL, updated INTEGER NOT NULL, host TEXT, PRIMARY KEY (message_id, action_index));
INSERT INTO forge_actions VALUES('reply-1@corp.example',0,'note','pb-1-0','done',11,'d1',1,NULL,1733221501,1733221502,'mx1');
CREATE TABLE outmail ( message_id TEXT PRIMARY KEY NOT NULL  REFERENCES thread_map (message_id), envelope_from TEXT NOT NULL, recipients TEXT NOT NULL, message BLOB NOT NULL, state TEXT NOT NULL CHECK (state IN ('queued', 'deferred',  'failed')), attempts INTEGER NOT NULL CHECK (attempts >= 0), next_attempt INTEGER NOT NULL, last_error TEXT, created INTEGER NOT NULL, updated INTEGER NOT NULL, claimed_by TEXT, lease_until INTEGER NOT NULL DEFAULT 0, handed INTEGER NOT NULL DEFAULT 0);
INSERT INTO outmail VALUES('patch-2-1@bridge.example.org','patchbridge@bridge.example.org','list@example.org',X'5375626a6563743a205b50415443482076325d0a0a780a','deferred',1,1733306460,'smtp: 451 try again',1733306400,1733306460,NULL,0,0);
CREATE TABLE archive ( message_id TEXT PRIMARY KEY NOT NULL, project TEXT NOT NULL, iid INTEGER NOT NULL CHECK (iid > 0), origin TEXT NOT NULL CHECK (origin IN ('bridge', 'list')), message BLOB NOT NULL, created INTEGER NOT NULL);
INSERT INTO archive VALUES('patch-1-1@bridge.example.org','group/project',1,'bridge',X'5375626a6563743a205b50415443485d0a0a780a',1733220005);
INSERT INTO archive VALUES('reply-1@corp.example','group/project',1,'list',X'5375626a6563743a2052653a205b50415443485d0a0a4c47544d0a',1733221500);
CREATE TABLE trailer_verdicts ( message_id TEXT NOT NULL, trailer_index INTEGER NOT NULL CHECK (trailer_index >= 0), verdict TEXT NOT NULL, PRIMARY KEY (message_id, trailer_index));
INSERT INTO trailer_verdicts VALUES('reply-1@corp.example',0,'counted');
CREATE UNIQUE INDEX thread_map_series ON thread_map (project, iid, revision, patch) WHERE kind IN ('cover', 'patch');
CREATE INDEX thread_map_revision ON thread_map (project, iid, revision);
CREATE INDEX thread_map_discussion ON thread_map (project, discussion_id) WHERE discussion_id IS NOT NULL;
CREATE INDEX thread_map_note ON thread_map (project, note_id) WHERE note_id IS NOT NULL;
CREATE INDEX inbound_due ON inbound (next_attempt, created) WHERE state IN ('received', 'failed');
CREATE INDEX inbound_state ON inbound (state, created);
CREATE INDEX archive_by_mr ON archive (project, iid, created);
CREATE INDEX inbound_lease ON inbound (lease_until) WHERE state = 'applying';
CREATE INDEX thread_map_created ON thread_map (created, message_id);
PRAGMA user_version = 8;
COMMIT;
