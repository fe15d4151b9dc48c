module gpusizer-peer

go 1.19
