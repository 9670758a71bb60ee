"""The curators' surface: the catalogue's admin, shared tasks' admin actions, data terms' admin, import_dataset."""
