/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The live progress line on a terminal, one implementation for sandbox-app-boot and
 * sandbox-ctl: each liveline_show() rewrites the line in place ("\r", the text, "\033[K"),
 * cut to the terminal's width, with control characters shown as '?' so that a log line cannot
 * move the cursor; liveline_done() keeps it on the screen and moves below it. Where the stream
 * is not a terminal the callers print plain lines instead (liveline.tty says which).
 */
#ifndef SA_LIVELINE_H
#define SA_LIVELINE_H

#include <stdbool.h>
#include <stdio.h>

struct liveline {
	FILE *f;
	bool tty;    /* f is a terminal */
	bool shown;  /* a live line is on the screen, without its newline */
	int columns; /* of the terminal (80 when unknown) */
};

void liveline_init(struct liveline *l, FILE *f);
/* Replace the line on the screen with text (only on a terminal; else nothing is written). */
void liveline_show(struct liveline *l, const char *text);
/* Keep the line on the screen: end it with a newline, if one is shown. */
void liveline_done(struct liveline *l);

#endif
