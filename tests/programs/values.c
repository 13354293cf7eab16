/* Values as gdb prints them in the Locals, Watch and Memory panes (tests/ui/test_ui_values_c.py): a
   character array (alone and in a struct), pointers to memory the program cannot read, an int (not an
   address), an array of bytes for the Memory pane. */
#include <stdio.h>
#include <string.h>

struct node {
    char name[16];
    int count;
    struct node *next;
};

static int total(struct node *n) {
    int count = 0;
    int *bad = (int *)0x10;
    struct node *far = (struct node *)0x10;
    while (n) {
        count += n->count;
        n = n->next;
    }
    printf("total %d %p %p\n", count, (void *)bad, (void *)far); /* MARK:total */
    return count;
}

int main(void) {
    struct node b = {"node2", 3, NULL};
    struct node a = {"node1", 1, &b};
    char name[16];
    unsigned char bytes[64];
    strcpy(name, "node2");
    for (int i = 0; i < 64; i++)
        bytes[i] = (unsigned char)('A' + i % 26);
    int t = total(&a);
    printf("%s %d %c\n", name, t, bytes[0]);
    return 0;
}
