-- The bridge's own outbound mail, by each marker, on one connection:
-- decided at the end of the header (ACCEPT there, no body, no EOM), no
-- header, not spooled.
dofile(os.getenv("MT_DIR") .. "/common.lua")
local conn = open()
local cases = {
	{ "own Message-ID", {
		{ "From", "Dev via patchbridge <dev@example.org>" },
		{ "Subject", "[PATCH v3 2/7] list: grow the array" },
		{ "Message-ID", our_id(2) },
		{ "In-Reply-To", our_id(0) } } },
	{ "X-Patchbridge-* header", {
		{ "From", "Dev via patchbridge <dev@example.org>" },
		{ "Message-ID", "<forge-note-1@example.org>" },
		{ "In-Reply-To", our_id(2) },
		{ "X-Patchbridge-Note", "group/project!12 #501" } } },
	{ "Auto-Submitted: auto-replied", {
		{ "From", "Away <away@example.org>" },
		{ "Auto-Submitted", "auto-replied" },
		{ "In-Reply-To", our_id(2) } } },
	{ "From the bridge", {
		{ "From", "patchbridge <patchbridge@bridge.example.org>" },
		{ "Message-ID", "<receipt-1@example.org>" },
		{ "In-Reply-To", our_id(2) } } },
}
for i, c in ipairs(cases) do
	if send(conn, "4LOOP" .. i, c[2], { "body\r\n" }) ~=
		SMFIR_ACCEPT then
		error("loop (" .. c[1] .. "): expected ACCEPT at the end " ..
			"of the header")
	end
end
mt.disconnect(conn)
mt.echo("PASS loop: " .. #cases .. " markers")
