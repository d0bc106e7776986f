-- [milter] memory_limit = 64k (miltertest.sh): two replies of 40 KiB at
-- once do not both fit, so one of them goes on in a file (which one
-- depends on the order the milter's threads take them in; both, when one
-- asks while the other is still moving to its file); the first is
-- aborted, the second bridged whole; a third, over 64 KiB, goes to a
-- file and its connection closes mid-message.  Then a reply of 40 KiB
-- alone must fit in memory again: every end gave its share back.
--
-- The milter answers no body chunk, so nothing tells when one was taken;
-- and libmilter drops what it has not read when the MTA hangs up.  The
-- third connection waits a second before it closes, and the last reply
-- a second after that, for the milter to have ended it.
dofile(os.getenv("MT_DIR") .. "/common.lua")

local line = string.rep("y", 1022) .. "\r\n"
local part = string.rep(line, 20) -- 20 KiB

local function start(conn, qid, msgid)
	mail_from(conn, qid)
	send_headers(conn, reply_headers(msgid))
	if mt.eoh(conn) ~= nil then error("eoh") end
	if reply(conn, SMFIP_NR_EOH) ~= SMFIR_CONTINUE then
		error(msgid .. ": eoh: expected CONTINUE")
	end
end

local function chunk(conn, text)
	if mt.bodystring(conn, text) ~= nil then error("body") end
	if reply(conn, SMFIP_NR_BODY) ~= SMFIR_CONTINUE then
		error("body: unexpected reply")
	end
end

local function finish(conn, what)
	if mt.eom(conn) ~= nil then error("eom") end
	if mt.getreply(conn) ~= SMFIR_CONTINUE then
		error(what .. ": expected CONTINUE at EOM")
	end
	local h = expect_header(conn, what)
	if not string.find(h, "trailers=Acked-by", 1, true) then
		error(what .. ": the trailer was not read: " .. h)
	end
	if string.find(h, "cut=", 1, true) then
		error(what .. ": cut: " .. h)
	end
end

local a = open()
local b = open()
start(a, "4BUDGETA1", "<mt-budget-a@example.org>")
chunk(a, part)
chunk(a, part) -- 40 KiB: a's buffer takes the whole budget
start(b, "4BUDGETB1", "<mt-budget-b@example.org>")
chunk(b, part)
chunk(b, part) -- no room: b goes on in a file
if mt.abort(a) ~= nil then error("abort") end
chunk(b, "\r\nAcked-by: Rev Iewer <rev@example.org>\r\n")
finish(b, "budget b")

-- the connection that aborted carries on
if send(a, "4BUDGETA2", reply_headers("<mt-budget-a2@example.org>"),
	reply_body) ~= SMFIR_CONTINUE then
	error("after abort: expected CONTINUE")
end
expect_header(a, "after abort")

-- over 64 KiB alone: in a file; the connection closes mid-message
local c = open()
start(c, "4BUDGETC1", "<mt-budget-c@example.org>")
chunk(c, part)
chunk(c, part)
chunk(c, part)
chunk(c, part)
mt.sleep(1)
mt.disconnect(c)
mt.disconnect(a)
mt.sleep(1)

-- alone again: 40 KiB fit in memory (the shell counts the files)
start(b, "4BUDGETD1", "<mt-budget-d@example.org>")
chunk(b, part)
chunk(b, part)
chunk(b, "\r\nAcked-by: Rev Iewer <rev@example.org>\r\n")
finish(b, "budget d")
mt.disconnect(b)
mt.echo("PASS budget")
