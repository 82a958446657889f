//! (layer `nn`: see DESIGN.md; filled by its issue)
