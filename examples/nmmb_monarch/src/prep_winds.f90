! Variable step (per day), 2/4: horizontal interpolation of the degribbed
! winds to the model grid, with terrain blocking (wind reduced over high
! ground) and var_work smoothing passes.
!
!   prep_winds NAMELIST DEGRIB TOPOGRAPHY OUT
program prep_winds
  use nmmb_io
  implicit none
  real(dp), allocatable :: cu(:, :), cv(:, :), topo(:, :), uu(:, :), vv(:, :), blk(:, :)
  integer :: u, o
  call need_args(4, 'prep_winds NAMELIST DEGRIB TOPOGRAPHY OUT')
  call read_namelist(arg(1))
  call open_in(arg(2), u)
  call get_field(u, cu, 'u')
  call get_field(u, cv, 'v')
  close(u)
  call read_one(arg(3), topo, 'topography')
  allocate(uu(nx, ny), vv(nx, ny), blk(nx, ny))
  call interp(cu, uu)
  call interp(cv, vv)
  blk = 1.0_dp / (1.0_dp + (topo / 2000.0_dp)**2)
  uu = uu * blk; vv = vv * blk
  call smooth(uu, var_work, 0.1_dp)
  call smooth(vv, var_work, 0.1_dp)
  call open_out(arg(4), o)
  call put_field(o, 'u', uu)
  call put_field(o, 'v', vv)
  close(o)
end program prep_winds
