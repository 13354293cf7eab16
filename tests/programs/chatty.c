/* Output to scroll through and a long value to print (tests/ui/test_ui_console_output.py): 300 numbered
   lines, one line of 400 characters, then a stop in done(). */
#include <stdio.h>
#include <string.h>

static int done(const char *text) {
    return (int)strlen(text); /* MARK:done */
}

int main(void) {
    char text[301];
    for (int i = 0; i < 300; i++)
        text[i] = (char)('a' + i % 26);
    text[300] = '\0';
    for (int i = 1; i <= 300; i++)
        printf("output line %d\n", i);
    for (int i = 0; i < 400; i++)
        putchar('0' + i % 10);
    printf("|end of the long line\n");
    fflush(stdout);
    return done(text) == 300 ? 0 : 1;
}
