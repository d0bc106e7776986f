-- The spool cannot be written (the shell removed its tmp/ directory):
-- a relevant reply is answered TEMPFAIL, so Postfix never accepts a reply
-- that was not spooled; an irrelevant one still passes.
dofile(os.getenv("MT_DIR") .. "/common.lua")
local conn = open()
if send(conn, "4TEMPFAIL1", reply_headers("<mt-tempfail@example.org>"),
	reply_body) ~= SMFIR_TEMPFAIL then
	error("tempfail: expected TEMPFAIL at EOM")
end
mt.disconnect(conn)
conn = open()
if send(conn, "4TEMPFAIL2", {
		{ "Subject", "[ANNOUNCE] still flowing" },
	}, { "text\r\n" }) ~= SMFIR_ACCEPT then
	error("tempfail: irrelevant mail must still pass (at the end of " ..
		"the header)")
end
mt.disconnect(conn)
mt.echo("PASS tempfail")
