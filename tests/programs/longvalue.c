/* A 5000-character string (no runs of repeated characters, so gdb prints it as is) ending in "END". */
#include <stdlib.h>
#include <string.h>

#define LEN 5000

static int consume(const char *text) {
    return (int)strlen(text); /* MARK:consume */
}

int main(void) {
    char *text = malloc(LEN + 1);
    for (int i = 0; i < LEN; i++)
        text[i] = (char)('a' + i % 26);
    memcpy(text + LEN - 3, "END", 3);
    text[LEN] = '\0';
    int n = consume(text);
    free(text);
    return n == LEN ? 0 : 1;
}
