-- A reply to a bridged patch: CONTINUE, and the X-Patchbridge header.
dofile(os.getenv("MT_DIR") .. "/common.lua")
local conn = open()
local qid = os.getenv("MT_QID") or "4RELEVANT1"
if send(conn, qid, reply_headers("<mt-relevant@example.org>"),
	reply_body) ~= SMFIR_CONTINUE then
	error("relevant: expected CONTINUE at EOM")
end
local v = expect_header(conn, "relevant")
local want = "reply group/project!12 v3 2/7; via=msgid; " ..
	"trailers=Acked-by; inline="
if string.sub(v, 1, #want) ~= want then
	error("relevant: header is '" .. v .. "'")
end
if not string.find(v, "; queued", 1, true) then
	error("relevant: header does not say queued: " .. v)
end
mt.disconnect(conn)
mt.echo("PASS relevant: X-Patchbridge: " .. v)
