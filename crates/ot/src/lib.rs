//! (layer `ot`: see DESIGN.md; filled by its issue)
