irdl.dialect @ascend {
}
