"""Dashboard widgets; each `.tcss` next to its module holds that widget's layout and colours."""
