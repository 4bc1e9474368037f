print("suite-defaults")
