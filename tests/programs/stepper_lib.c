/* The other file of stepper.c: a step into scale shows this file in the source pane. */
int scale(int v) {
    int w = v * 3;
    if (w % 2)
        w += 1;
    return w;
}
