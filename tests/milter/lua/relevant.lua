-- A reply to a bridged patch: CONTINUE, and the X-Patchbridge header.
dofile(os.getenv("MT_DIR") .. "/common.lua")
local conn = open()
-- the protocol options the milter asks for (glue.c, cb_negotiate): no
-- connect or HELO event, no reply to MAIL, header fields and body
local want = { { SMFIP_NOCONNECT, "NOCONNECT" }, { SMFIP_NOHELO, "NOHELO" },
	{ SMFIP_NR_MAIL, "NR_MAIL" }, { SMFIP_NR_HDR, "NR_HDR" },
	{ SMFIP_NR_BODY, "NR_BODY" } }
for _, o in ipairs(want) do
	if not mt.test_option(conn, o[1]) then
		error("relevant: the milter did not ask for SMFIP_" .. o[2])
	end
end
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
