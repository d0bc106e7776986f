-- Shared steps of the miltertest scripts (loaded with dofile).
-- The milter runs already (miltertest.sh starts it once, so the ~5 s
-- libmilter stop is paid once); MT_SOCK names its socket.
--
-- Pitfalls (miltertest(8); OpenDKIM's miltertest/miltertest.c): steps the
-- filter opted out of must be skipped (mt.test_option), else miltertest
-- stops with exit 1 and says nothing at verbosity 0; and macros are never
-- sent on their own: the queue id "i" is sent explicitly with MAIL, where
-- libmilter keeps it for EOM.

sock = os.getenv("MT_SOCK")
if sock == nil then error("MT_SOCK is not set") end

-- The bridge's Message-ID for patch k of 7 of group/project!12 v3.
function our_id(k)
	return "<pb.v3." .. k .. "-7.group.project.12.0123456789ab@" ..
		"bridge.example.org>"
end

function open()
	local conn = mt.connect(sock, 40, 0.05)
	if conn == nil then error("connect to " .. sock .. " failed") end
	if not mt.test_option(conn, SMFIP_NOCONNECT) then
		if mt.conninfo(conn, "client.example", "192.0.2.10") ~= nil then
			error("conninfo")
		end
	end
	if not mt.test_option(conn, SMFIP_NOHELO) then
		if mt.helo(conn, "client.example") ~= nil then error("helo") end
	end
	return conn
end

-- MAIL FROM with the queue id qid, answered CONTINUE.
function mail_from(conn, qid)
	mt.macro(conn, SMFIC_MAIL, "i", qid)
	if mt.mailfrom(conn, "<rev@example.org>") ~= nil then
		error("mailfrom")
	end
	if mt.getreply(conn) ~= SMFIR_CONTINUE then
		error("mailfrom: unexpected reply")
	end
	if not mt.test_option(conn, SMFIP_NORCPT) then
		if mt.rcptto(conn, "<patches@lists.example.test>") ~= nil then
			error("rcptto")
		end
	end
end

-- The header fields, a list of {name, value}, each answered CONTINUE.
function send_headers(conn, headers)
	for _, h in ipairs(headers) do
		if mt.header(conn, h[1], h[2]) ~= nil then
			error("header " .. h[1])
		end
		if mt.getreply(conn) ~= SMFIR_CONTINUE then
			error("header " .. h[1] .. ": unexpected reply")
		end
	end
end

-- End of header, the body (a list of strings sent as separate chunks)
-- and end of message.  Returns the reply to EOM.
function send_body(conn, body)
	if mt.eoh(conn) ~= nil then error("eoh") end
	for _, chunk in ipairs(body) do
		if mt.bodystring(conn, chunk) ~= nil then error("body") end
		if mt.getreply(conn) ~= SMFIR_CONTINUE then
			error("body: unexpected reply")
		end
	end
	if mt.eom(conn) ~= nil then error("eom") end
	return mt.getreply(conn)
end

-- One message: headers is a list of {name, value}, body a list of
-- strings sent as separate chunks.  Returns the reply to EOM.
function send(conn, qid, headers, body)
	mail_from(conn, qid)
	send_headers(conn, headers)
	return send_body(conn, body)
end

-- Tell the shell script this point is reached: create the file $MT_MARK.
function mark()
	local f = io.open(os.getenv("MT_MARK"), "w")
	if f == nil then error("cannot create MT_MARK") end
	f:close()
end

-- A reply to patch 2/7, placed by its In-Reply-To (our scheme).
function reply_headers(msgid)
	return {
		{ "From", "Rev Iewer <rev@example.org>" },
		{ "Subject", "Re: [PATCH v3 2/7] list: grow the array" },
		{ "Message-ID", msgid },
		{ "In-Reply-To", our_id(2) },
		{ "References", our_id(0) .. "\n\t" .. our_id(2) },
	}
end

reply_body = {
	"> +\tif (l->nr == l->alloc && list_grow(l) < 0)\r\n" ..
	"> +\t\treturn -ENOMEM;\r\n\r\nKeep -1 here.\r\n\r\n",
	"Acked-by: Rev Iewer <rev@example.org>\r\n",
}

function expect_header(conn, what)
	if not mt.eom_check(conn, MT_HDRADD, "X-Patchbridge") then
		error(what .. ": no X-Patchbridge header added")
	end
	return mt.getheader(conn, "X-Patchbridge", 0)
end

function expect_no_header(conn, what)
	if mt.eom_check(conn, MT_HDRADD, "X-Patchbridge") then
		error(what .. ": an X-Patchbridge header was added")
	end
end
