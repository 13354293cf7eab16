"""Python breakpoints and stepping across three functions (tests/agent/test_agent.py)."""


def c(n):
    y = n + 1  # MARK:c_body
    return y  # MARK:c_ret


def b(n):
    v = c(n) * 2  # MARK:b_call
    return v  # MARK:b_ret


def a(n):
    w = b(n)  # MARK:a_call
    w += 1  # MARK:a_after
    return w


def main():
    total = 0

    # MARK:blank (the line above is empty, this one a comment: no code on either)
    for i in range(6):
        total += a(i)  # MARK:main_call
    print("total", total, flush=True)  # MARK:main_print


if __name__ == "__main__":
    main()
