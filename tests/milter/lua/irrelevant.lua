-- Mail about no series: decided at the end of the header - ACCEPT there,
-- so neither body nor EOM is sent, no header, no spool record (the shell
-- counts them) - and the connection goes on.
dofile(os.getenv("MT_DIR") .. "/common.lua")
local conn = open()
if send(conn, "4IRRELEVANT1", {
		{ "From", "Maint <maint@example.org>" },
		{ "Subject", "[ANNOUNCE] release 1.0" },
		{ "Message-ID", "<mt-announce@example.org>" },
	}, { "The release is out.\r\n" }) ~= SMFIR_ACCEPT then
	error("irrelevant: expected ACCEPT at the end of the header")
end
-- threaded, but under mail the bridge never sent
if send(conn, "4IRRELEVANT2", {
		{ "Subject", "Re: lunch" },
		{ "In-Reply-To", "<lunch@example.org>" },
		{ "References", "<plans@example.org> <lunch@example.org>" },
	}, { "Yes.\r\n" }) ~= SMFIR_ACCEPT then
	error("irrelevant 2: expected ACCEPT at the end of the header")
end
-- "Re: [PATCH k/M]" with no open revision vN of M to be placed on by
-- its quote (there is no thread map at all here)
if send(conn, "4IRRELEVANT3", {
		{ "Subject", "Re: [PATCH v3 2/7] list: grow the array" },
		{ "In-Reply-To", "<somewhere@example.org>" },
	}, { "No quote here.\r\n" }) ~= SMFIR_ACCEPT then
	error("irrelevant 3: expected ACCEPT at the end of the header")
end
-- an encoded subject is read at the end of message
if send(conn, "4IRRELEVANT5", {
		{ "Subject", "=?UTF-8?Q?Re:_[PATCH_v3_2/7]_list?=" },
		{ "In-Reply-To", "<somewhere@example.org>" },
	}, { "No quote here.\r\n" }) ~= SMFIR_CONTINUE then
	error("irrelevant 5: expected CONTINUE at EOM")
end
expect_no_header(conn, "irrelevant 5")
-- and a reply after them is bridged on the same connection
if send(conn, "4IRRELEVANT4", reply_headers("<mt-after-irrelevant@example.org>"),
	reply_body) ~= SMFIR_CONTINUE then
	error("after irrelevant: expected CONTINUE at EOM")
end
expect_header(conn, "after irrelevant")
mt.disconnect(conn)
mt.echo("PASS irrelevant")
