/*
 * gmime_hello FILE: the least a program that reads a mail with GMime does
 * - g_mime_init(), parse FILE, print its Subject, g_mime_shutdown() - as
 * the floor of `patchbridge parse FILE` per process in parse_bench.sh:
 * the same shared objects loaded and relocated, the same library
 * initialised, and none of patchbridge's own work.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <gmime/gmime.h>

int main(int argc, char **argv)
{
	GMimeStream *stream;
	GMimeParser *parser;
	GMimeMessage *msg;
	const char *subject;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: gmime_hello FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	g_mime_init();
	stream = g_mime_stream_fs_new(fd);
	parser = g_mime_parser_new_with_stream(stream);
	msg = g_mime_parser_construct_message(parser, NULL);
	subject = msg ? g_mime_message_get_subject(msg) : NULL;
	printf("%s\n", subject ? subject : "");
	if (msg)
		g_object_unref(msg);
	g_object_unref(parser);
	g_object_unref(stream);
	g_mime_shutdown();
	return msg ? 0 : 1;
}
