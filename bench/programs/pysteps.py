"""The program of bench/ui_python_step.py: a loop of small functions, stepped line by line."""


def scale(x):
    y = x * 3  # MARK:scale_body
    return y + 1


def main():
    total = 0
    for i in range(1000000):
        v = scale(i)  # MARK:loop_call
        total += v  # MARK:loop_add
        total %= 1000003
    print(total)


main()
