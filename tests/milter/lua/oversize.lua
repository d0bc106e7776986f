-- A relevant reply over max_message_size (64k in this test): what fits
-- is bridged - CONTINUE, the header saying it was cut, one record.
dofile(os.getenv("MT_DIR") .. "/common.lua")
local conn = open()
local chunk = string.rep("x", 8191) .. "\n"
local body = {}
for i = 1, 10 do body[i] = chunk end
if send(conn, "4OVERSIZE1", reply_headers("<mt-oversize@example.org>"),
	body) ~= SMFIR_CONTINUE then
	error("oversize: expected CONTINUE")
end
expect_header(conn, "oversize")
-- the next message on the connection is handled normally
if send(conn, "4OVERSIZE2", reply_headers("<mt-after-oversize@example.org>"),
	reply_body) ~= SMFIR_CONTINUE then
	error("after oversize: expected CONTINUE")
end
expect_header(conn, "after oversize")
mt.disconnect(conn)
mt.echo("PASS oversize")
