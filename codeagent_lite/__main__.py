from .cli import main_entry

# Guarded: verify's worker processes import this module by name on platforms without fork (Windows).
if __name__ == "__main__":
    main_entry()
