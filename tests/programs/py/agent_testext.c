/* A tiny extension module for "step into native" (tests/agent/test_agent.py builds it per interpreter). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *testext_add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) /* MARK:testext_add_body */
        return NULL;
    return PyLong_FromLong(a + b);
}

static PyMethodDef methods[] = {
    {"add", testext_add, METH_VARARGS, "a + b"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "tuidbg_testext", NULL, -1, methods};

PyMODINIT_FUNC PyInit_tuidbg_testext(void) { return PyModule_Create(&moddef); }
