-- Mail about no series: CONTINUE, no header (and no spool record: the
-- shell counts them).
dofile(os.getenv("MT_DIR") .. "/common.lua")
local conn = open()
if send(conn, "4IRRELEVANT1", {
		{ "From", "Maint <maint@example.org>" },
		{ "Subject", "[ANNOUNCE] release 1.0" },
		{ "Message-ID", "<mt-announce@example.org>" },
	}, { "The release is out.\r\n" }) ~= SMFIR_CONTINUE then
	error("irrelevant: expected CONTINUE")
end
expect_no_header(conn, "irrelevant")
-- threaded, but under mail the bridge never sent
if send(conn, "4IRRELEVANT2", {
		{ "Subject", "Re: lunch" },
		{ "In-Reply-To", "<lunch@example.org>" },
	}, { "Yes.\r\n" }) ~= SMFIR_CONTINUE then
	error("irrelevant 2: expected CONTINUE")
end
expect_no_header(conn, "irrelevant 2")
mt.disconnect(conn)
mt.echo("PASS irrelevant")
