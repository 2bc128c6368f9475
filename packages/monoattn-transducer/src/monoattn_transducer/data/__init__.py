"""Real input of the reproduce: English spoken numbers with German numeral-morpheme targets."""
