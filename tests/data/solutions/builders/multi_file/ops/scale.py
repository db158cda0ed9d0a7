def scale(x):
    return 3.0 * x
