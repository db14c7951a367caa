print("herald: not yet built")
