OFFSET = 100.0


def shift(x):
    return x + 1.0
