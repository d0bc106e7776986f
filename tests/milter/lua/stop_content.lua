-- A stop while a message's content is arriving: the header fields are
-- sent, then a pause longer than the drain's envelope grace (stop.sh
-- sends SIGTERM meanwhile).  The drain waits for the message: it is
-- spooled and answered CONTINUE with the X-Patchbridge header.
dofile(os.getenv("MT_DIR") .. "/common.lua")
local conn = open()
mail_from(conn, "4STOPCONT1")
send_headers(conn, reply_headers("<mt-stop-content@example.org>"))
mark()
mt.sleep(tonumber(os.getenv("MT_PAUSE") or "4"))
if send_body(conn, reply_body) ~= SMFIR_CONTINUE then
	error("stop_content: expected CONTINUE at EOM")
end
local v = expect_header(conn, "stop_content")
if not string.find(v, "; queued", 1, true) then
	error("stop_content: header does not say queued: " .. v)
end
mt.disconnect(conn)
mt.echo("PASS stop_content: X-Patchbridge: " .. v)
