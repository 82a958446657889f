//! (layer `he`: see DESIGN.md; filled by its issue)
