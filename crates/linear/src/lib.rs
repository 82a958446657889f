//! (layer `linear`: see DESIGN.md; filled by its issue)
